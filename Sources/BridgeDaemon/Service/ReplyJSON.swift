import BeaconCore

/// JSON forms of the method replies besides `Status` (whose contract is `StatusDocument`).
extension OutboxSummary {
  /// The counts (`StatusDocument.Outbox`) and why each dead letter was refused, as the support
  /// bundle's `outbox.json`.
  public func json(deadLetters: [(key: String, reason: String)]) -> JSONValue {
    let counts = StatusDocument.Outbox(self).json
    guard case .object(var fields) = counts else { return counts }
    fields["deadLetterReasons"] = .array(deadLetters.map(Self.deadLetterJSON))
    return .object(fields)
  }

  /// A refused batch, `{"key", "reason"}`, as `TripRetry` answers and the bundle lists it.
  static func deadLetterJSON(key: String, reason: String) -> JSONValue {
    .object(["key": .string(key), "reason": .string(reason)])
  }
}

extension Pairing {
  /// `ReportedPairing`'s object: a pairing by key shows how it is proven and its number
  /// (`pairing`), never its key.
  public var json: JSONValue { ReportedPairing(self).json }
}
