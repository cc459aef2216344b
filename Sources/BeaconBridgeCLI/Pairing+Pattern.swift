import BeaconCore

/// How `pair` and `pairs` show a pairing: its identity pattern, or which key it is by.
extension Pairing {
  var pattern: String {
    if let key { return key.scheme == .eid ? "Eddystone-EID key #\(key.pairing)" : "IRK #\(key.pairing)" }
    return "\(uuid.uuidString) \(major.map(String.init) ?? "*")/\(minor.map(String.init) ?? "*")"
  }
}
