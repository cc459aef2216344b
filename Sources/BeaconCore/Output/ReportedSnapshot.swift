/// A paired beacon and the device ID it resolves to, at one moment: the active beacon (the
/// `activeBeaconChanged` event line, the status's `activeBeacon`) and the snapshot that resolved
/// a trip (`tripTagged`, the upload body's `beacon`). The smoothed RSSI and the distance are
/// rounded to 0.1 (dBm, m) here, for every output.
public struct ReportedSnapshot: Sendable, Equatable {
  public enum Key: String { case deviceId, label, rssi, smoothedRssi, distance, proximity }

  public var deviceId: DeviceID
  public var label: String?
  public var identity: ReportedIdentity
  public var rssi: Int?
  public var smoothedRSSI: Double?
  public var distance: Double?
  /// Nil in a status read back (the status does not give it).
  public var proximity: String?

  public init(
    deviceId: DeviceID, label: String?, identity: ReportedIdentity, rssi: Int? = nil,
    smoothedRSSI: Double? = nil,
    distance: Double? = nil, proximity: String? = nil
  ) {
    self.deviceId = deviceId
    self.label = label
    self.identity = identity
    self.rssi = rssi
    self.smoothedRSSI = smoothedRSSI.map(Rounding.tenths)
    self.distance = distance.map(Rounding.tenths)
    self.proximity = proximity
  }

  public init(_ active: ActiveBeacon) {
    self.init(
      deviceId: active.deviceId, label: active.pairing.label, identity: ReportedIdentity(active.id),
      rssi: active.lastRSSI, smoothedRSSI: active.smoothedRSSI, distance: active.distance,
      proximity: active.proximity.rawValue)
  }

  /// The status's active beacon: only what `statusJSON` writes, so that it reads back equal.
  public init(statusOf active: ActiveBeacon) {
    self.init(
      deviceId: active.deviceId, label: active.pairing.label, identity: ReportedIdentity(active.id),
      smoothedRSSI: active.smoothedRSSI)
  }

  public init(_ snapshot: BeaconSnapshot) {
    self.init(
      deviceId: snapshot.deviceId, label: snapshot.label, identity: ReportedIdentity(snapshot.id),
      rssi: snapshot.lastRSSI, smoothedRSSI: snapshot.smoothedRSSI, distance: snapshot.distance,
      proximity: snapshot.proximity.rawValue)
  }

  /// An event line's fields after the device ID: identity, signal, label.
  public var signalFields: [(key: String, value: JSONValue)] {
    var w = FieldWriter<Key>()
    w.merge(identity.fields)
    w.add(.rssi, .of(rssi))
    w.add(.smoothedRssi, .of(smoothedRSSI))
    w.add(.label, .of(label))
    return w.fields
  }

  /// `activeBeaconChanged`'s fields: the device ID, then `signalFields`.
  public var eventFields: [(key: String, value: JSONValue)] {
    var w = FieldWriter<Key>()
    w.add(.deviceId, .string(deviceId.rawValue))
    w.merge(signalFields)
    return w.fields
  }

  /// `activeBeaconChanged` with no active beacon.
  public static let noneFields: [(key: String, value: JSONValue)] = {
    var w = FieldWriter<Key>()
    w.add(.deviceId, .null)
    return w.fields
  }()

  /// The upload body's `beacon` (docs/upload.md): what is unknown is left out.
  public var uploadJSON: JSONValue {
    var w = FieldWriter<Key>()
    w.omittable(.proximity, proximity.map { .string($0) })
    w.merge(identity.fields)
    w.omittable(.label, label.map { .string($0) })
    w.omittable(.rssi, rssi.map { .of($0) })
    w.omittable(.smoothedRssi, smoothedRSSI.map { .double($0) })
    w.omittable(.distance, distance.map { .double($0) })
    return w.json
  }

  /// The status's `activeBeacon`.
  public var statusJSON: JSONValue {
    var w = FieldWriter<Key>()
    w.add(.deviceId, .string(deviceId.rawValue))
    w.add(.label, .of(label))
    w.merge(identity.fields)
    w.omittable(.smoothedRssi, smoothedRSSI.map { .double($0) })
    return w.json
  }

  /// Reads the status's `activeBeacon`.
  public init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    deviceId = try r.required(.deviceId, FieldValue.deviceID)
    label = try r.optional(.label, FieldValue.string)
    identity = try .init(json: json, path: path)
    smoothedRSSI = try r.optional(.smoothedRssi, omittable: true, FieldValue.double)
  }
}
