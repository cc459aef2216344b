import BeaconCore

/// What the backend receives for one tagged batch (docs/upload.md): one JSON object, the same
/// over HTTP and MQTT, and the batch's idempotency key. HTTP sends the key as the
/// `Idempotency-Key` header; MQTT, which has no headers a subscriber must see, puts it in the
/// object too (`idempotencyKey`) as well as in an MQTT 5 user property.
public struct UploadPayload: Sendable, Equatable {
  public let idempotencyKey: String
  /// The object every sink sends, without the key.
  public let object: JSONValue

  /// The payload of `batch`. Its trip ID is a `TripID`, so the key's trip part always holds; a
  /// batch whose sequence is negative has no key and is never sent (it could be applied twice):
  /// a `PermanentPostFailure`, which the bridge dead-letters.
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
    fields[Key.idempotencyKey.rawValue] = .string(idempotencyKey)
    return Array(JSONValue.object(fields).compactText.utf8)
  }

  enum Key: String { case tripId, deviceId, sequence, resolution, beacon, events, idempotencyKey }

  /// The object for a batch (docs/upload.md, "The request"); its `beacon` is the snapshot that
  /// resolved the trip (`ReportedSnapshot`), null without one.
  static func object(for batch: TaggedTripBatch) -> JSONValue {
    var w = FieldWriter<Key>()
    w.add(.tripId, .string(batch.tripId.rawValue))
    w.add(.deviceId, .string(batch.deviceId.rawValue))
    w.add(.sequence, .of(batch.sequence))
    w.add(.resolution, .string(batch.resolution.reason))
    w.add(.beacon, batch.beacon.map { ReportedSnapshot($0).uploadJSON } ?? .null)
    w.add(.events, .array(batch.events.map(\.json)))
    return w.json
  }
}
