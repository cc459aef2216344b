import CSQLite

#if canImport(Glibc)
  import Glibc
#endif

/// The store's file: whose it is, and its schema, brought up to date on open
/// (`PRAGMA user_version`, `Store.schemaVersion`).
extension Store {
  /// Checks that the file is ours (before writing anything), opens it and brings its schema
  /// up to date.
  static func open(path: String) throws(StoreError) -> SQLiteDatabase {
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
      // A page cache of 512 KiB, not SQLite's 2 MiB: the daemon reads the queue's head, one
      // batch and a few small tables, so a larger cache only held a long outbox's index pages
      // (counted once at start, read a window at a time) in the daemon's RSS.
      try database.execute("PRAGMA cache_size=-512")
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
      if version < 4 {
        try database.transaction { () throws(SQLiteError) in
          try database.execute(Store.fleetSchema + "PRAGMA user_version = 4;")
        }
      }
      if version < 5 {
        try database.transaction { () throws(SQLiteError) in
          try database.execute(Store.keyPairingSchema + "PRAGMA user_version = 5;")
        }
      }
      if version < 6 {
        try database.transaction { () throws(SQLiteError) in
          try database.execute(Store.fleetKeySchema + "PRAGMA user_version = 6;")
        }
      }
      if version < 7 {
        try database.transaction { () throws(SQLiteError) in
          try database.execute(Store.fleetAsideSchema + "PRAGMA user_version = 7;")
        }
      }
      if version < 8 {
        try database.transaction { () throws(SQLiteError) in
          try database.execute(Store.queueSchema + "PRAGMA user_version = 8;")
        }
      }
      // Deleted rows (an unpaired key) are overwritten with zeros in the file, not left in free
      // pages.
      try database.execute("PRAGMA secure_delete=ON")
      Store.restrictToOwner(path)
      return database
    } catch let error as StoreError {
      throw error
    } catch let error as SQLiteError {
      throw StoreError(error, path: path)
    } catch {
      throw StoreError(.io, "the store \(path): \(error)")
    }
  }
}

extension Store {
  /// Opens an existing store for reading only: its owner and schema are checked, and nothing is
  /// written, not even the `-wal` and `-shm` files SQLite keeps beside a store in WAL mode.
  ///
  /// A WAL database is read through its `-shm` index, which a reader creates when it is
  /// missing. On a directory this user cannot write (a read-only mount, a support engineer's
  /// copy, another user's directory) that fails (`SQLITE_CANTOPEN`); and on one it can, a
  /// read-only connection would leave both files behind, owned by whoever ran the command. So:
  /// - no `-wal` file: no connection has the store open (the last one to close removes it),
  ///   and the whole database is in the main file. It is opened `immutable=1`: no lock, no
  ///   `-shm`, nothing created. A daemon starting in the moment of the read could change the file
  ///   under it; the read then fails and says so, and running the command again reads it.
  /// - a `-wal` file: a daemon may be writing, or stopped without a checkpoint; commits may be
  ///   in the log. It is opened `mode=ro`, which reads the log through the existing `-shm` (on
  ///   a read-only mount too, where SQLite keeps that index in memory). Without a `-shm` on a
  ///   directory that cannot be written, the log cannot be read, and that is said rather than
  ///   the main file read without it (`immutable=1` would leave out the commits in the log).
  static func openReadOnly(path: String, directory: String) throws(StoreError) -> SQLiteDatabase {
    var info = stat()
    let hasLog = stat(path + "-wal", &info) == 0
    // Checked first: the ownership check reads the tables through the log too.
    if hasLog, stat(path + "-shm", &info) != 0, access(directory, W_OK | X_OK) != 0 {
      throw StoreError(
        .io,
        "the store \(path) has a write-ahead log (\(path)-wal) that cannot be read here: its index (-shm) is missing and \(directory) cannot be written; copy the state directory to a writable place and read the copy, or run where the daemon runs"
      )
    }
    let ownership = StoreOwnership.examine(path: path)
    switch ownership {
    case .foreign(let why):
      throw StoreError(.foreign, "\(path) is not a beaconbridge store (\(why)); it was left unchanged")
    case .notADatabase:
      throw StoreError(
        .corrupt,
        "the store \(path) is damaged or not a database (no SQLite header); it was left as it is. Move it aside to start afresh, or keep it for support"
      )
    case .absent:
      throw StoreError(
        .io,
        "the store \(path) was not found (or is empty); pass --state-dir with the daemon's state directory")
    case .ours, .oursWithoutID, .emptyDatabase: break
    }
    let uri = "file:" + StoreOwnership.percentEncodedPath(path) + (hasLog ? "?mode=ro" : "?immutable=1")
    let database: SQLiteDatabase
    let version: Int64
    do {
      database = try SQLiteDatabase(readOnlyURI: uri, path: path)
      version = try database.query("PRAGMA user_version").first?.first?.integer ?? 0
    } catch {
      throw StoreError(error, path: path)
    }
    guard version <= schemaVersion else {
      throw StoreError(
        .newerSchema,
        "the store \(path) has schema version \(version); this beaconbridge reads up to \(schemaVersion)")
    }
    guard version < schemaVersion else { return database }
    // An older schema lacks tables this build reads: brought up to date as the daemon would,
    // where that can be written.
    guard access(directory, W_OK | X_OK) == 0 else {
      throw StoreError(
        .io,
        "the store \(path) has schema version \(version), from an older beaconbridge, and \(directory) cannot be written to bring it up to date (\(schemaVersion)); read it with the beaconbridge that wrote it, or copy the state directory to a writable place"
      )
    }
    return try Store.open(path: path)
  }
}
