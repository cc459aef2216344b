import CSQLite
import FoundationEssentials

/// The daemon's state: pairings (PairingStore.swift), trips, their outbox and dead letters
/// (Outbox.swift), G-Zone (GZoneStore.swift), and the fleet's applied document (FleetStore.swift); the schema is StoreSchema.swift's. One SQLite
/// file in the state directory, in WAL mode with `synchronous=FULL`, so a commit survives a power
/// cut.
public actor Store {
  public static let fileName = "beaconbridge.sqlite"
  /// Schema versions this build can read (`PRAGMA user_version`).
  static let schemaVersion: Int64 = 8
  /// `PRAGMA application_id`: "BBBR" in ASCII, beaconbridge's mark in the file's header
  /// (offset 68), so that a database another program made is never written to
  /// (`StoreOwnership`).
  public static let applicationID: Int32 = 0x4242_4252

  let database: SQLiteDatabase
  public nonisolated let path: String
  /// The outbox refuses new batches beyond this many undelivered ones.
  public private(set) var outboxLimit = 100_000
  /// Rows in `queue`, counted once and then kept in step by every write (Outbox.swift), so that
  /// taking a batch costs no count of the queue.
  var queueCount: Int?
  /// What the last `load` set aside, one sentence each (`loadNotices`).
  var notices: [String] = []

  /// The wall clock the store stamps its rows with (when a pairing, a batch, a dead letter or a
  /// fleet document was written, and the outbox's oldest age), in seconds since 1970: read
  /// through this alone, so that a test can give the store a fixed time.
  nonisolated let wallClock: @Sendable () -> Double

  /// The system's wall clock, which every store reads unless it is given another.
  public static let systemWallClock: @Sendable () -> Double = { Date().timeIntervalSince1970 }

  public func setOutboxLimit(_ limit: Int) { outboxLimit = max(1, limit) }

  /// Opens the store in `directory`, creating both when missing.
  public init(directory: String, wallClock: @escaping @Sendable () -> Double = Store.systemWallClock)
    throws(StoreError)
  {
    do { try StateDirectory.prepare(directory) } catch {
      throw StoreError(.cannotCreateDirectory, error.description)
    }
    let path = StateDirectory.path(directory, Self.fileName)
    self.path = path
    self.wallClock = wallClock
    database = try Self.open(path: path)
  }

  /// Opens the store in `directory` to read it only (`pairs`, `replay --state-dir`, `doctor`,
  /// `diagnose`): nothing is created or written, so it works on a read-only mount or a copy
  /// this user cannot write (`StoreSchema.swift`, `openReadOnly`). A store from an older
  /// beaconbridge is brought up to date as `init(directory:)` does where the directory can be
  /// written, and refused with a sentence where it cannot.
  public init(readingOnly directory: String) throws(StoreError) {
    let path = StateDirectory.path(directory, Self.fileName)
    self.path = path
    wallClock = Self.systemWallClock
    database = try Self.openReadOnly(path: path, directory: directory)
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
