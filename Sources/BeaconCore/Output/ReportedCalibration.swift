/// The frame's own calibration, as the frame carries it: `measuredPower` (dBm at 1 m) for
/// iBeacon, AltBeacon and a device by IRK (its reference RSSI), `txPower` (dBm at 0 m) for
/// Eddystone; the other null. `powerAt1m` is Eddystone's Tx power less 41 dB
/// (`BeaconFrame.powerAt1m`).
public struct ReportedCalibration: Sendable, Equatable {
  public enum Key: String { case measuredPower, txPower }

  public var measuredPower: Int?
  public var txPower: Int?

  public init(measuredPower: Int? = nil, txPower: Int? = nil) {
    self.measuredPower = measuredPower
    self.txPower = txPower
  }

  public init(_ id: BeaconID, powerAt1m: Int?) {
    switch id {
    case .iBeacon, .altBeacon: self.init(measuredPower: powerAt1m)
    case .keyed(let k) where k.scheme == .rpa: self.init(measuredPower: powerAt1m)
    case .eddystone, .keyed: self.init(txPower: powerAt1m.map { $0 + 41 })
    }
  }

  public var fields: [(key: String, value: JSONValue)] {
    var w = FieldWriter<Key>()
    w.add(.measuredPower, .of(measuredPower))
    w.add(.txPower, .of(txPower))
    return w.fields
  }

  public init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    measuredPower = try r.optional(.measuredPower, FieldValue.int)
    txPower = try r.optional(.txPower, FieldValue.int)
  }
}
