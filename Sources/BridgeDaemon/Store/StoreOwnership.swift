import CSQLite

#if canImport(Glibc)
  import Glibc
#endif

/// Whether the file at the store's path is beaconbridge's, decided before anything is written
/// to it: a database another program made is refused and left byte for byte as it was.
///
/// Stores carry `PRAGMA application_id = 0x42424252` ("BBBR", `Store.applicationID`), set
/// when the schema is created. A store from before the id (id 0) is recognised by its
/// `user_version` and its exact set of tables, and gets the id on its next open.
enum StoreOwnership: Equatable {
  /// No file, or an empty one: the store is created.
  case absent
  /// Ours: the id is set.
  case ours
  /// Ours from before the id: `user_version` and the tables match a schema version.
  case oursWithoutID
  /// An SQLite database with no tables and no version: taken over.
  case emptyDatabase
  /// Not ours; why, in words.
  case foreign(String)
  /// Not an SQLite file at all (no "SQLite format 3" header): a damaged store or another file;
  /// reported as damaged, and kept.
  case notADatabase

  /// The tables each schema version has (sqlite_* internals aside).
  static let tables: [Int64: Set<String>] = [
    1: ["pairings"],
    2: ["pairings", "trips", "batches", "dead_letters", "decisions"],
    3: ["pairings", "trips", "batches", "dead_letters", "decisions", "gzone_last_load"],
    4: [
      "pairings", "trips", "batches", "dead_letters", "decisions", "gzone_last_load", "fleet_applied",
      "fleet_pairings", "fleet_link",
    ],
    5: [
      "pairings", "trips", "batches", "dead_letters", "decisions", "gzone_last_load", "fleet_applied",
      "fleet_pairings", "fleet_link", "key_pairings",
    ],
    6: [
      "pairings", "trips", "batches", "dead_letters", "decisions", "gzone_last_load", "fleet_applied",
      "fleet_pairings", "fleet_link", "key_pairings", "fleet_key_pairings",
    ],
    7: [
      "pairings", "trips", "batches", "dead_letters", "decisions", "gzone_last_load", "fleet_applied",
      "fleet_pairings", "fleet_link", "key_pairings", "fleet_key_pairings", "fleet_set_aside",
    ],
    8: [
      "pairings", "trips", "queue", "dead_letters", "decisions", "gzone_last_load", "fleet_applied",
      "fleet_pairings", "fleet_link", "key_pairings", "fleet_key_pairings", "fleet_set_aside",
    ],
  ]

  /// Reads the file's 100-byte header with read(2), then, only for a database without an id,
  /// lists its tables through a read-only connection that writes nothing (`immutable=1` when
  /// there is no write-ahead log, `mode=ro` when there is one to read).
  static func examine(path: String) -> StoreOwnership {
    let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
    guard fd >= 0 else {
      if errno == ENOENT { return .absent }
      if errno == ELOOP { return .foreign("it is a symbolic link") }
      // Unreadable for another reason: let SQLite's own open report it.
      return .ours
    }
    var info = stat()
    var header = [UInt8](repeating: 0, count: 100)
    let count = header.withUnsafeMutableBytes { read(fd, $0.baseAddress, 100) }
    let statOK = fstat(fd, &info) == 0
    close(fd)
    guard statOK, info.st_mode & S_IFMT == S_IFREG else { return .foreign("it is not a regular file") }
    if info.st_size == 0 { return .absent }
    guard count == 100, header.starts(with: Array("SQLite format 3\0".utf8)) else {
      return .notADatabase
    }
    func integer(at offset: Int) -> UInt32 {
      header[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }
    let id = integer(at: 68)
    if id == UInt32(bitPattern: Store.applicationID) { return .ours }
    guard id == 0 else {
      return .foreign("its application_id is 0x\(String(id, radix: 16)), not beaconbridge's")
    }
    let (logged, version, names) = schema(path: path)
    guard let names else { return .foreign("its tables cannot be read") }
    // A store still open elsewhere keeps its newest header in the write-ahead log until a
    // checkpoint: the id read through SQLite is the one that counts.
    if logged == Store.applicationID { return .ours }
    if names.isEmpty && version == 0 { return .emptyDatabase }
    if let expected = tables[version], names == expected { return .oursWithoutID }
    let listed = names.sorted().joined(separator: ", ")
    return .foreign("it has user_version \(version) and tables \(listed.isEmpty ? "(none)" : listed)")
  }

  /// `application_id`, `user_version` and the user tables, read without writing: no -shm or
  /// -wal file is created when none exists. A connection that holds the file for a moment (a
  /// checkpoint as it closes) is waited for, as the store's own connection waits.
  static func schema(path: String) -> (applicationID: Int32, version: Int64, tables: Set<String>?) {
    var walInfo = stat()
    let hasLog = stat(path + "-wal", &walInfo) == 0 && walInfo.st_size > 0
    let uri = "file:" + percentEncodedPath(path) + (hasLog ? "?mode=ro" : "?immutable=1")
    var db: OpaquePointer?
    defer { sqlite3_close_v2(db) }
    guard
      sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nil)
        == SQLITE_OK,
      let db
    else { return (0, 0, nil) }
    sqlite3_busy_timeout(db, 2000)
    func rows(_ sql: String) -> [String]? {
      var statement: OpaquePointer?
      guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else { return nil }
      defer { sqlite3_finalize(statement) }
      var out: [String] = []
      while true {
        let rc = sqlite3_step(statement)
        if rc == SQLITE_DONE { return out }
        guard rc == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return nil }
        out.append(String(cString: text))
      }
    }
    guard
      let names = rows(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"),
      let version = rows("PRAGMA user_version")?.first.flatMap({ Int64($0) }),
      let id = rows("PRAGMA application_id")?.first.flatMap({ Int32($0) })
    else { return (0, 0, nil) }
    return (id, version, Set(names))
  }

  /// A path as the path of a `file:` URI: `%`, `?` and `#` escaped (sqlite.org/uri.html).
  static func percentEncodedPath(_ path: String) -> String {
    var out = ""
    for c in path {
      switch c {
      case "%": out += "%25"
      case "?": out += "%3F"
      case "#": out += "%23"
      default: out.append(c)
      }
    }
    return out
  }
}
