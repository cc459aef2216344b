import BeaconCore
import FoundationEssentials

/// The fleet's desired document as applied (schema version 4): its version and settings, and
/// which pairings it owns. Applied in one transaction with the pairings, so the store holds the
/// old document or the new one, never half.
extension Store {
  static let fleetSchema = """
    CREATE TABLE IF NOT EXISTS fleet_applied (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      version INTEGER NOT NULL,
      settings TEXT NOT NULL,
      applied_at REAL NOT NULL
    );
    CREATE TABLE IF NOT EXISTS fleet_pairings (
      uuid TEXT NOT NULL,
      major INTEGER,
      minor INTEGER
    );
    CREATE TABLE IF NOT EXISTS fleet_link (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      since REAL NOT NULL
    );
    """

  /// The sentence `pair` and `unpair` refuse with while the fleet owns the pairings.
  public static let fleetOwnsPairings =
    "this box is paired by its fleet: [Fleet] is configured, so the desired document on the broker owns the pairings (docs/fleet.md); change them there, or remove [Fleet] and restart the daemon"

  /// Records whether `[Fleet]` is configured, as the daemon starts: while it is, `pair` and
  /// `unpair` refuse, whether they reach the daemon or write the store themselves.
  public func setFleetOwnsPairings(_ owns: Bool) throws(StoreError) {
    do {
      if owns {
        try database.query(
          "INSERT OR IGNORE INTO fleet_link (id, since) VALUES (1, ?)", [.real(Date().timeIntervalSince1970)])
      } else {
        try database.query("DELETE FROM fleet_link")
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Throws the refusal when the fleet owns the pairings.
  func refuseWhileFleetOwnsPairings() throws(StoreError) {
    let owned: Bool
    do { owned = try !database.query("SELECT 1 FROM fleet_link").isEmpty } catch {
      throw StoreError(error, path: path)
    }
    if owned { throw StoreError(.fleetOwnsPairings, Self.fleetOwnsPairings) }
  }

  /// The applied document's version and settings; nil before the first.
  public func fleetApplied() throws(StoreError) -> (version: Int64, settings: [FleetSetting])? {
    do {
      guard let row = try database.query("SELECT version, settings FROM fleet_applied WHERE id = 1").first,
        let version = row[0].integer
      else { return nil }
      // A settings row that no longer reads counts as no settings; the version stands.
      let settings =
        row[1].text.flatMap { try? JSONDecoder().decode([FleetSetting].self, from: Data($0.utf8)) } ?? []
      return (version, settings)
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Whether each pairing came from the fleet's document (else it was paired locally).
  public func fleetOwns(_ pairings: [Pairing]) throws(StoreError) -> [Bool] {
    do {
      let rows = try database.query("SELECT uuid, major, minor FROM fleet_pairings")
      let owned = Set(rows.map { "\($0[0].text ?? "")/\($0[1].integer ?? -1)/\($0[2].integer ?? -1)" })
      return pairings.map {
        owned.contains(
          "\($0.uuid.uuidString)/\($0.major.map(Int64.init) ?? -1)/\($0.minor.map(Int64.init) ?? -1)")
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Every pairing as `pairs --json` shows it, with its `source`: `fleet` (the desired
  /// document's) or `local` (paired on the box).
  public func pairingsWithSource() throws(StoreError) -> [JSONValue] {
    let all = try pairings()
    let owned = try fleetOwns(all)
    return zip(all, owned).map { pairing, fleet in
      var fields = pairing.json.objectValue ?? [:]
      fields["source"] = .string(fleet ? "fleet" : "local")
      return .object(fields)
    }
  }

  /// Replaces every pairing with the document's and records its version and settings, in one
  /// transaction. `midway` runs inside it, after the pairings are written (a test's kill point).
  public func applyFleet(_ document: FleetDocument, midway: @Sendable () -> Void = {}) throws(StoreError) {
    do {
      let settings = String(decoding: try JSONEncoder().encode(document.settings), as: UTF8.self)
      try database.transaction { () throws(SQLiteError) in
        try database.execute("DELETE FROM pairings; DELETE FROM fleet_pairings;")
        for pairing in document.pairings {
          let identity: [SQLiteValue] = [
            .text(pairing.uuid.uuidString), SQLiteValue(pairing.major.map(Int.init)),
            SQLiteValue(pairing.minor.map(Int.init)),
          ]
          try database.query(
            "INSERT INTO pairings (uuid, major, minor, device_id, label, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            identity + [
              .text(pairing.deviceId), SQLiteValue(pairing.label), .real(Date().timeIntervalSince1970),
            ])
          try database.query("INSERT INTO fleet_pairings (uuid, major, minor) VALUES (?, ?, ?)", identity)
        }
        midway()
        try database.query(
          "INSERT OR REPLACE INTO fleet_applied (id, version, settings, applied_at) VALUES (1, ?, ?, ?)",
          [.integer(document.version), .text(settings), .real(Date().timeIntervalSince1970)])
      }
    } catch let error as SQLiteError {
      throw StoreError(error, path: path)
    } catch {
      throw StoreError(.io, "the store \(path): \(error)")
    }
  }
}
