/// One event a trip recorder reports, with all of its fields.
///
/// The seed app's types are recognised (`TripEventKind`); any other type is kept as it is, never
/// dropped.
public struct TripEvent: Hashable, Sendable {
  /// The whole object, as received.
  public var fields: [String: JSONValue]

  public init(fields: [String: JSONValue]) {
    self.fields = fields
  }

  /// Builds an event from a decoded JSON value; it must be an object with a string `type`.
  public init(json: JSONValue) throws(TripEventError) {
    guard let object = json.objectValue else {
      throw TripEventError("an event must be a JSON object, not \(json.typeName)")
    }
    guard let type = object["type"] else { throw TripEventError("an event has no \"type\"") }
    guard type.stringValue != nil else { throw TripEventError("an event's \"type\" must be a string") }
    self.fields = object
  }

  public var type: String { fields["type"]?.stringValue ?? "" }

  public var kind: TripEventKind { TripEventKind(rawValue: type) ?? .other }

  public var json: JSONValue { .object(fields) }
}

/// The SmartDriveDemo app's TripEventType set: braking, acceleration, cornering, speeding,
/// distraction start/end. The wire names follow the seed's camelCase style.
public enum TripEventKind: String, Hashable, Sendable, CaseIterable {
  case braking
  case acceleration
  case cornering
  case speeding
  case distractionStart
  case distractionEnd
  /// Any other type: kept and forwarded unchanged.
  case other
}

public struct TripEventError: Error, Hashable, Sendable, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}
