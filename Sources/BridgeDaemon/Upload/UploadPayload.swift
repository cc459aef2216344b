import BeaconCore

/// What the backend receives for one tagged batch (docs/upload.md): one JSON object, the same
/// over HTTP and MQTT, and the batch's idempotency key. HTTP sends the key as the
/// `Idempotency-Key` header; MQTT, which has no headers a subscriber must see, puts it in the
/// object too (`idempotencyKey`) as well as in an MQTT 5 user property.
public struct UploadPayload: Sendable, Equatable {
  public let idempotencyKey: String
  /// The object every sink sends, without the key.
  public let object: JSONValue

  /// The payload of `batch`. A batch whose key cannot be made from a valid trip ID is never
  /// sent (it could be applied twice): a `PermanentPostFailure`, which the bridge dead-letters.
  public init(_ batch: TaggedTripBatch) throws(PermanentPostFailure) {
    do { idempotencyKey = try batch.validatedIdempotencyKey() } catch {
      throw PermanentPostFailure("not sent: no Idempotency-Key can be made from it: \(error.description)")
    }
    object = Self.object(for: batch)
  }

  /// The HTTP request body: the object as compact JSON.
  public var httpBody: [UInt8] { Array(object.compactText.utf8) }

  /// The MQTT message: the object with `idempotencyKey` in it.
  public var mqttBody: [UInt8] {
    guard case .object(var fields) = object else { return httpBody }
    fields["idempotencyKey"] = .string(idempotencyKey)
    return Array(JSONValue.object(fields).compactText.utf8)
  }

  /// The object for a batch (docs/upload.md, "The request").
  static func object(for batch: TaggedTripBatch) -> JSONValue {
    var beacon: JSONValue = .null
    if let s = batch.beacon {
      var fields: [String: JSONValue] = ["proximity": .string(s.proximity.rawValue)]
      for (key, value) in s.id.jsonFields { fields[key] = value }
      if let label = s.label { fields["label"] = .string(label) }
      if let rssi = s.lastRSSI { fields["rssi"] = .int(Int64(rssi)) }
      if let smoothed = s.smoothedRSSI { fields["smoothedRssi"] = .double((smoothed * 10).rounded() / 10) }
      if let distance = s.distance { fields["distance"] = .double((distance * 100).rounded() / 100) }
      beacon = .object(fields)
    }
    return .object([
      "tripId": .string(batch.tripId),
      "deviceId": .string(batch.deviceId),
      "sequence": .int(Int64(batch.sequence)),
      "resolution": .string(batch.resolution.reason),
      "beacon": beacon,
      "events": .array(batch.events.map(\.json)),
    ])
  }
}
