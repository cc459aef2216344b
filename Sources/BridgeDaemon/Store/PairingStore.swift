import BeaconCore
import CSQLite
import FoundationEssentials

/// Why the store could not be used. Every case keeps the file: a corrupt or locked database is
/// reported, never deleted or overwritten.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Code: String, Hashable, Sendable {
    case cannotCreateDirectory
    case corrupt
    case locked
    case newerSchema
    /// The file at the store's path is not a beaconbridge store; it was left unchanged.
    case foreign
    case io
  }

  public var code: Code
  public var description: String

  init(_ code: Code, _ description: String) {
    self.code = code
    self.description = description
  }

  init(_ error: SQLiteError, path: String) {
    if error.isCorrupt {
      self.init(
        .corrupt,
        "the store \(path) is damaged (\(error.message)); it was left as it is. Move it aside to start afresh, or keep it for support"
      )
    } else if error.isBusy {
      self.init(.locked, "the store \(path) is locked by another process (\(error.message)); try again")
    } else {
      self.init(.io, "the store \(path): \(error.description)")
    }
  }
}

/// The daemon's state: pairings now; the outbox joins it with the upload path. One SQLite file in
/// the state directory, in WAL mode with `synchronous=FULL`, so a commit survives a power cut.
public actor Store {
  public static let fileName = "beaconbridge.sqlite"
  /// Schema versions this build can read (`PRAGMA user_version`).
  static let schemaVersion: Int64 = 3
  /// `PRAGMA application_id`: "BBBR" in ASCII, beaconbridge's mark in the file's header
  /// (offset 68), so that a database another program made is never written to
  /// (`StoreOwnership`).
  public static let applicationID: Int32 = 0x4242_4252

  let database: SQLiteDatabase
  public nonisolated let path: String
  /// The outbox refuses new batches beyond this many undelivered ones.
  public private(set) var outboxLimit = 100_000

  public func setOutboxLimit(_ limit: Int) { outboxLimit = max(1, limit) }

  /// Opens the store in `directory`, creating both when missing.
  public init(directory: String) throws(StoreError) {
    do { try StateDirectory.prepare(directory) } catch {
      throw StoreError(.cannotCreateDirectory, error.description)
    }
    let path = StateDirectory.path(directory, Self.fileName)
    self.path = path
    database = try Self.open(path: path)
  }

  /// Checks that the file is ours (before writing anything), opens it and brings its schema
  /// up to date.
  private static func open(path: String) throws(StoreError) -> SQLiteDatabase {
    let ownership = StoreOwnership.examine(path: path)
    if case .foreign(let why) = ownership {
      throw StoreError(
        .foreign,
        "\(path) is not a beaconbridge store (\(why)); it was left unchanged. Move it aside, or pass --state-dir with another directory"
      )
    }
    if ownership == .notADatabase {
      throw StoreError(
        .corrupt,
        "the store \(path) is damaged or not a database (no SQLite header); it was left as it is. Move it aside to start afresh, or keep it for support"
      )
    }
    do {
      let database = try SQLiteDatabase(path: path, create: true)
      try database.execute("PRAGMA journal_mode=WAL")
      try database.execute("PRAGMA synchronous=FULL")
      try database.execute("PRAGMA foreign_keys=ON")
      let version = try database.query("PRAGMA user_version").first?.first?.integer ?? 0
      guard version <= schemaVersion else {
        throw StoreError(
          .newerSchema,
          "the store \(path) has schema version \(version); this beaconbridge reads up to \(schemaVersion)")
      }
      if version < 1 {
        try database.transaction { () throws(SQLiteError) in
          try database.execute(
            """
            CREATE TABLE IF NOT EXISTS pairings (
              uuid TEXT NOT NULL,
              major INTEGER,
              minor INTEGER,
              device_id TEXT NOT NULL,
              label TEXT,
              created_at REAL NOT NULL,
              PRIMARY KEY (uuid, major, minor)
            );
            PRAGMA user_version = 1;
            """)
        }
      }
      if ownership != .ours {
        // A new store, or one made before the id: mark it as ours.
        try database.execute("PRAGMA application_id = \(applicationID)")
      }
      if version < 2 {
        try database.transaction { () throws(SQLiteError) in
          try database.execute(
            """
            CREATE TABLE IF NOT EXISTS trips (
              trip_id TEXT PRIMARY KEY,
              started_at REAL NOT NULL,
              resolution TEXT,
              beacon_mode INTEGER NOT NULL DEFAULT 1,
              ended_at REAL,
              next_sequence INTEGER NOT NULL DEFAULT 0
            );
            CREATE TABLE IF NOT EXISTS batches (
              trip_id TEXT NOT NULL REFERENCES trips(trip_id),
              sequence INTEGER NOT NULL,
              events TEXT NOT NULL,
              received_at REAL NOT NULL,
              PRIMARY KEY (trip_id, sequence)
            );
            CREATE TABLE IF NOT EXISTS dead_letters (
              trip_id TEXT NOT NULL,
              sequence INTEGER NOT NULL,
              events TEXT NOT NULL,
              resolution TEXT,
              reason TEXT NOT NULL,
              failed_at REAL NOT NULL,
              PRIMARY KEY (trip_id, sequence)
            );
            CREATE TABLE IF NOT EXISTS decisions (
              id INTEGER PRIMARY KEY AUTOINCREMENT,
              trip_id TEXT NOT NULL,
              resolution TEXT NOT NULL,
              decided_at REAL NOT NULL
            );
            PRAGMA user_version = 2;
            """)
        }
      }
      if version < 3 {
        try database.transaction { () throws(SQLiteError) in
          try database.execute(Store.gzoneSchema + "PRAGMA user_version = 3;")
        }
      }
      return database
    } catch let error as StoreError {
      throw error
    } catch let error as SQLiteError {
      throw StoreError(error, path: path)
    } catch {
      throw StoreError(.io, "the store \(path): \(error)")
    }
  }

  /// Every pairing, in a stable order.
  public func pairings() throws(StoreError) -> [Pairing] {
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
            .text(pairing.deviceId), SQLiteValue(pairing.label), .real(Date().timeIntervalSince1970),
          ])
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Removes every pairing of a device ID; returns how many there were.
  public func unpair(deviceId: String) throws(StoreError) -> Int {
    do {
      return try database.transaction { () throws(SQLiteError) -> Int in
        try database.query("DELETE FROM pairings WHERE device_id = ?", [.text(deviceId)])
        return database.changes
      }
    } catch {
      throw StoreError(error, path: path)
    }
  }

  /// Changes whenever another connection (another process) commits to the file.
  public func dataVersion() throws(StoreError) -> Int64 {
    do { return try database.query("PRAGMA data_version").first?.first?.integer ?? 0 } catch {
      throw StoreError(error, path: path)
    }
  }

  /// The SQLite library's version.
  public nonisolated static var sqliteVersion: String { String(cString: sqlite3_libversion()) }

  /// `PRAGMA quick_check`: "ok", or what is wrong.
  public func check() throws(StoreError) -> String {
    do {
      return try database.query("PRAGMA quick_check").compactMap { $0.first?.text }.joined(separator: "; ")
    } catch {
      throw StoreError(error, path: path)
    }
  }
}
