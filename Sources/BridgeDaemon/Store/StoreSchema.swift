import CSQLite

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
