import BeaconCore
import CSQLite

/// An SQLite error: the primary result code, and whether it happened reading or writing.
///
/// What users see is `description`: plain words for the code and what fixes it ("the disk is
/// full; free space on it"), never the code's number or the statement; the library's own
/// message is kept for support (`message`), not shown.
public struct SQLiteError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The primary result code (`SQLITE_BUSY`, `SQLITE_CORRUPT`, …).
  public var code: Int32
  /// `sqlite3_errmsg`'s text.
  public var message: String
  /// The statement that failed, for `doing`.
  public var context: String

  public var isCorrupt: Bool { code == SQLITE_CORRUPT || code == SQLITE_NOTADB }
  public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }

  /// "writing to it" or "reading it", from the statement's first word.
  public var doing: String {
    let verb = context.split(whereSeparator: { $0 == " " || $0 == "\n" }).first?.uppercased() ?? ""
    if verb == "SELECT" { return "reading it" }
    if verb.hasPrefix("OPENING") || verb.isEmpty { return "opening it" }
    return "writing to it"
  }

  /// What went wrong, in words, and the fix.
  public var reason: String {
    switch code {
    case SQLITE_FULL: "the disk is full; free space on it"
    case SQLITE_READONLY: "it is read-only (a read-only file system, or a file this user cannot write)"
    case SQLITE_IOERR: "an input/output error (the disk failed); check the disk (dmesg)"
    case SQLITE_CANTOPEN: "it cannot be opened; check that the state directory exists and is writable"
    case SQLITE_PERM, SQLITE_AUTH: "permission denied; run as root or as the beaconbridge user"
    case SQLITE_CORRUPT, SQLITE_NOTADB: "it is damaged; move it aside to start afresh, or keep it for support"
    case SQLITE_BUSY, SQLITE_LOCKED: "another process holds it locked; try again"
    case SQLITE_NOMEM: "out of memory"
    case SQLITE_CONSTRAINT: "a record conflicts with one already stored"
    case SQLITE_TOOBIG: "a record is too large"
    case SQLITE_PROTOCOL: "another process's locking failed; try again"
    default: "the database refused the operation (\(message.escapingControlCharacters))"
    }
  }

  public var description: String { "\(doing) failed: \(reason)" }
}

/// One SQLite connection. Not thread-safe on its own: the `Store` actor owns it.
final class SQLiteDatabase {
  private var handle: OpaquePointer?
  let path: String

  /// Opens (creating if asked) the database file. The corresponding C function is
  /// `sqlite3_open_v2`.
  convenience init(path: String, create: Bool) throws(SQLiteError) {
    let flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX
    try self.init(opening: path, flags: flags, path: path)
  }

  /// Opens the database named by a `file:` URI for reading only (`SQLITE_OPEN_READONLY`): no
  /// file is created, and nothing written.
  convenience init(readOnlyURI uri: String, path: String) throws(SQLiteError) {
    try self.init(
      opening: uri, flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, path: path)
  }

  /// The one opening: `name` (a path or a URI) with `flags`. The corresponding C function is
  /// `sqlite3_open_v2`.
  private init(opening name: String, flags: Int32, path: String) throws(SQLiteError) {
    self.path = path
    var db: OpaquePointer?
    let rc = sqlite3_open_v2(name, &db, flags, nil)
    guard rc == SQLITE_OK, let db else {
      let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
      sqlite3_close_v2(db)
      throw SQLiteError(code: rc & 0xFF, message: message, context: "opening")
    }
    handle = db
    // Wait for a lock rather than failing at once (another process may hold a write lock briefly).
    sqlite3_busy_timeout(db, 2000)
  }

  deinit {
    sqlite3_close_v2(handle)
  }

  /// Runs SQL that returns no rows. The corresponding C function is `sqlite3_exec`.
  func execute(_ sql: String) throws(SQLiteError) {
    let rc = sqlite3_exec(handle, sql, nil, nil, nil)
    guard rc == SQLITE_OK else { throw error(rc, sql) }
  }

  /// Runs one statement with bound values and returns its rows.
  @discardableResult
  func query(_ sql: String, _ values: [SQLiteValue] = []) throws(SQLiteError) -> [[SQLiteValue]] {
    try withStatement(sql) { (statement) throws(SQLiteError) -> [[SQLiteValue]] in
      try bind(values, to: statement, sql: sql)
      var rows: [[SQLiteValue]] = []
      while try step(statement, sql) { rows.append(Self.row(of: statement)) }
      return rows
    }
  }

  /// Prepares `sql`, runs `body` over the statement, then finalizes it. The corresponding C
  /// function is `sqlite3_prepare_v2`.
  func withStatement<T>(_ sql: String, _ body: (OpaquePointer) throws(SQLiteError) -> T) throws(SQLiteError)
    -> T
  {
    var statement: OpaquePointer?
    let rc = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
    guard rc == SQLITE_OK, let statement else { throw error(rc, sql) }
    defer { sqlite3_finalize(statement) }
    return try body(statement)
  }

  /// Binds `values` to the statement's first parameters, in order.
  func bind(_ values: [SQLiteValue], to statement: OpaquePointer, sql: String) throws(SQLiteError) {
    for (i, value) in values.enumerated() {
      let index = Int32(i + 1)
      let rc: Int32
      switch value {
      case .null: rc = sqlite3_bind_null(statement, index)
      case .integer(let n): rc = sqlite3_bind_int64(statement, index, n)
      case .real(let d): rc = sqlite3_bind_double(statement, index, d)
      case .text(let s): rc = sqlite3_bind_text(statement, index, s, -1, csqlite_transient())
      }
      guard rc == SQLITE_OK else { throw error(rc, sql) }
    }
  }

  /// Steps the statement: true at a row, false when it is done.
  func step(_ statement: OpaquePointer, _ sql: String) throws(SQLiteError) -> Bool {
    let rc = sqlite3_step(statement)
    if rc == SQLITE_DONE { return false }
    guard rc == SQLITE_ROW else { throw error(rc, sql) }
    return true
  }

  /// The current row's columns, leaving out `skipped` (a secret column read in place).
  static func row(of statement: OpaquePointer, skipping skipped: Int32? = nil) -> [SQLiteValue] {
    var row: [SQLiteValue] = []
    for column in 0..<sqlite3_column_count(statement) where column != skipped {
      switch sqlite3_column_type(statement, column) {
      case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
      case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(statement, column)))
      case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
      default: row.append(.null)
      }
    }
    return row
  }

  /// A failure; the SQL named is the statement's text, never a bound value.
  func error(_ rc: Int32, _ context: String) -> SQLiteError {
    SQLiteError(code: rc & 0xFF, message: String(cString: sqlite3_errmsg(handle)), context: context)
  }

  /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
  func transaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
    try execute("BEGIN IMMEDIATE")
    do {
      let result = try body()
      try execute("COMMIT")
      return result
    } catch {
      try? execute("ROLLBACK")
      throw error
    }
  }

  var changes: Int { Int(sqlite3_changes(handle)) }
}

/// A value bound to or read from a statement.
enum SQLiteValue: Hashable, Sendable {
  case null
  case integer(Int64)
  case real(Double)
  case text(String)

  var text: String? { if case .text(let s) = self { s } else { nil } }
  var integer: Int64? { if case .integer(let n) = self { n } else { nil } }

  init(_ text: String?) { self = text.map { .text($0) } ?? .null }
  init(_ n: Int?) { self = n.map { .integer(Int64($0)) } ?? .null }
}
