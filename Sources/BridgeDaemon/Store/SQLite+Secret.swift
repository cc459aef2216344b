import CSQLite

extension SQLiteDatabase {
  /// Runs one statement with `values` bound first and `secret` bound last, as text straight from
  /// the caller's bytes (SQLite copies them; no Swift value ever holds them), so the caller can
  /// wipe its buffer. The corresponding C function is `sqlite3_bind_text` with
  /// `SQLITE_TRANSIENT`.
  func execute(_ sql: String, _ values: [SQLiteValue], secret: UnsafeRawBufferPointer) throws(SQLiteError) {
    try withStatement(sql) { (statement) throws(SQLiteError) in
      try bind(values, to: statement, sql: sql)
      let rc = sqlite3_bind_text(
        statement, Int32(values.count + 1), secret.baseAddress?.assumingMemoryBound(to: CChar.self),
        Int32(secret.count), csqlite_transient())
      guard rc == SQLITE_OK else { throw failure(rc, sql) }
      let step = sqlite3_step(statement)
      guard step == SQLITE_DONE else { throw failure(step, sql) }
    }
  }

  /// The rows of a query whose column `secretColumn` is a secret: every other column is read as
  /// `query` reads it, and the secret's bytes are handed to `body` in place, in SQLite's buffer,
  /// valid only during the call. The corresponding C function is `sqlite3_column_text`.
  func query(
    _ sql: String, _ values: [SQLiteValue] = [], secretColumn: Int32,
    _ body: ([SQLiteValue], UnsafeRawBufferPointer) -> Void
  ) throws(SQLiteError) {
    try withStatement(sql) { (statement) throws(SQLiteError) in
      try bind(values, to: statement, sql: sql)
      while true {
        let rc = sqlite3_step(statement)
        if rc == SQLITE_DONE { return }
        guard rc == SQLITE_ROW else { throw failure(rc, sql) }
        var row: [SQLiteValue] = []
        for column in 0..<sqlite3_column_count(statement) where column != secretColumn {
          switch sqlite3_column_type(statement, column) {
          case SQLITE_INTEGER: row.append(.integer(sqlite3_column_int64(statement, column)))
          case SQLITE_FLOAT: row.append(.real(sqlite3_column_double(statement, column)))
          case SQLITE_TEXT: row.append(.text(String(cString: sqlite3_column_text(statement, column))))
          default: row.append(.null)
          }
        }
        let text = sqlite3_column_text(statement, secretColumn)
        let count = Int(sqlite3_column_bytes(statement, secretColumn))
        body(
          row, UnsafeRawBufferPointer(start: text.map(UnsafeRawPointer.init), count: text == nil ? 0 : count))
      }
    }
  }

  private func withStatement(_ sql: String, _ body: (OpaquePointer) throws(SQLiteError) -> Void)
    throws(SQLiteError)
  {
    var statement: OpaquePointer?
    let rc = sqlite3_prepare_v2(rawHandle, sql, -1, &statement, nil)
    guard rc == SQLITE_OK, let statement else { throw failure(rc, sql) }
    defer { sqlite3_finalize(statement) }
    try body(statement)
  }

  private func bind(_ values: [SQLiteValue], to statement: OpaquePointer, sql: String) throws(SQLiteError) {
    for (i, value) in values.enumerated() {
      let index = Int32(i + 1)
      let rc: Int32
      switch value {
      case .null: rc = sqlite3_bind_null(statement, index)
      case .integer(let n): rc = sqlite3_bind_int64(statement, index, n)
      case .real(let d): rc = sqlite3_bind_double(statement, index, d)
      case .text(let s): rc = sqlite3_bind_text(statement, index, s, -1, csqlite_transient())
      }
      guard rc == SQLITE_OK else { throw failure(rc, sql) }
    }
  }

  /// A failure; the SQL named is the statement's text, never a bound value.
  private func failure(_ rc: Int32, _ context: String) -> SQLiteError {
    SQLiteError(code: rc & 0xFF, message: String(cString: sqlite3_errmsg(rawHandle)), context: context)
  }
}
