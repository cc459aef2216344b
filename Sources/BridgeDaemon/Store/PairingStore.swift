import BeaconCore
import FoundationEssentials

/// The pairings table: beacon identity patterns bound to device IDs.
extension Store {
  /// Every pairing, in a stable order: by identity, then by key (without its key).
  public func pairings() throws(StoreError) -> [Pairing] {
    try identityPairings() + keyPairings().map(\.pairing)
  }

  private func identityPairings() throws(StoreError) -> [Pairing] {
    do {
      return try database.query(
        "SELECT uuid, major, minor, device_id, label FROM pairings ORDER BY device_id, uuid, major, minor"
      )
      .compactMap { row in
        // Read back through the same types the doors use: a row another tool wrote that breaks a
        // rule (major 70000, a device ID with a newline) is skipped, as a bad UUID always was,
        // never truncated into a different beacon.
        guard let uuidText = row[0].text, let uuid = UUID(uuidString: uuidText), let deviceId = row[3].text,
          let identity = try? PairingIdentity(
            uuid: uuid, major: row[1].integer.map { Int(clamping: $0) },
            minor: row[2].integer.map { Int(clamping: $0) }),
          let device = try? DeviceID(deviceId)
        else { return nil }
        let label = row[4].text.flatMap { (try? PairingLabel.check($0)) != nil ? $0 : nil }
        return Pairing(identity: identity, deviceId: device, label: label)
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Adds a pairing, replacing one with the same identity pattern. Committed before it returns.
  public func pair(_ pairing: Pairing) throws(StoreError) {
    try refuseWhileFleetOwnsPairings()
    do {
      try database.transaction { () throws(SQLiteError) in
        // NULL never equals NULL in a primary key, so wildcard rows are replaced explicitly.
        try database.query(
          "DELETE FROM pairings WHERE uuid = ? AND major IS ? AND minor IS ?",
          [
            .text(pairing.uuid.uuidString), SQLiteValue(pairing.major.map(Int.init)),
            SQLiteValue(pairing.minor.map(Int.init)),
          ])
        try database.query(
          "INSERT INTO pairings (uuid, major, minor, device_id, label, created_at) VALUES (?, ?, ?, ?, ?, ?)",
          [
            .text(pairing.uuid.uuidString), SQLiteValue(pairing.major.map(Int.init)),
            SQLiteValue(pairing.minor.map(Int.init)),
            .text(pairing.deviceId.rawValue), SQLiteValue(pairing.label), .real(wallClock()),
          ])
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Removes every pairing of a device ID; returns how many there were.
  public func unpair(deviceId: DeviceID) throws(StoreError) -> Int {
    try refuseWhileFleetOwnsPairings()
    do {
      return try database.transaction { () throws(SQLiteError) -> Int in
        try database.query("DELETE FROM pairings WHERE device_id = ?", [.text(deviceId.rawValue)])
        let identities = database.changes
        try database.query("DELETE FROM key_pairings WHERE device_id = ?", [.text(deviceId.rawValue)])
        return identities + database.changes
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }
}
