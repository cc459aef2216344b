/// A beacon in range as the `beaconEntered`/`beaconExited` event lines and the daemon's `Status`
/// (`beaconsInRange`) report it: its identity, calibration and health, where it was heard, and
/// its signal. The smoothed RSSI and the distance are rounded to 0.1 (dBm, m) here, for every
/// output.
public struct ReportedBeacon: Sendable, Equatable {
  public enum Key: String { case address, sightings, proximity, rssi, smoothedRssi, distance }

  public var address: String
  public var sightings: Int
  public var proximity: String
  public var identity: ReportedIdentity
  public var calibration: ReportedCalibration
  public var health: ReportedHealth
  /// Absent from the status rather than null when unknown (an in-range beacon always has a
  /// reading).
  public var rssi: Int?
  public var smoothedRSSI: Double?
  public var distance: Double?

  public init(_ beacon: TrackedBeacon, health: BeaconHealth? = nil, now: Timestamp? = nil) {
    address = beacon.address.description
    sightings = beacon.sightings
    proximity = beacon.proximity.rawValue
    identity = ReportedIdentity(beacon.id)
    calibration = ReportedCalibration(beacon.id, powerAt1m: beacon.powerAt1m)
    self.health = ReportedHealth(health ?? BeaconHealth(), now: now)
    rssi = beacon.lastRSSI
    smoothedRSSI = beacon.smoothedRSSI.map(Rounding.tenths)
    distance = beacon.distance.map(Rounding.tenths)
  }

  /// An event line's fields: identity, signal, proximity, address, calibration.
  public var eventFields: [(key: String, value: JSONValue)] {
    var w = FieldWriter<Key>()
    w.merge(identity.fields)
    w.add(.rssi, .of(rssi))
    w.add(.smoothedRssi, .of(smoothedRSSI))
    w.add(.distance, .of(distance))
    w.add(.proximity, .string(proximity))
    w.add(.address, .string(address))
    w.merge(calibration.fields)
    return w.fields
  }

  /// The status's object: with `sightings` and the health; the signal omitted when unknown.
  public var json: JSONValue {
    var w = FieldWriter<Key>()
    w.add(.address, .string(address))
    w.add(.sightings, .of(sightings))
    w.add(.proximity, .string(proximity))
    w.merge(identity.fields)
    w.merge(calibration.fields)
    w.merge(health.fields(withAge: true))
    w.omittable(.rssi, rssi.map { .of($0) })
    w.omittable(.smoothedRssi, smoothedRSSI.map { .double($0) })
    w.omittable(.distance, distance.map { .double($0) })
    return w.json
  }

  public init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    address = try r.string(.address)
    sightings = try r.int(.sightings)
    proximity = try r.string(.proximity)
    identity = try .init(json: json, path: path)
    calibration = try .init(json: json, path: path)
    health = try .init(json: json, path: path)
    rssi = try r.optional(.rssi, omittable: true, FieldValue.int)
    smoothedRSSI = try r.optional(.smoothedRssi, omittable: true, FieldValue.double)
    distance = try r.optional(.distance, omittable: true, FieldValue.double)
  }
}
