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
      guard rc == SQLITE_OK else { throw error(rc, sql) }
      let step = sqlite3_step(statement)
      guard step == SQLITE_DONE else { throw error(step, sql) }
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
      while try step(statement, sql) {
        let row = Self.row(of: statement, skipping: secretColumn)
        let text = sqlite3_column_text(statement, secretColumn)
        let count = Int(sqlite3_column_bytes(statement, secretColumn))
        body(
          row, UnsafeRawBufferPointer(start: text.map(UnsafeRawPointer.init), count: text == nil ? 0 : count))
      }
    }
  }

  /// The first column of the first row of a query whose one parameter is a secret, bound as
  /// `execute(_:_:secret:)` binds it; 0 for no row.
  func integer(_ sql: String, secret: UnsafeRawBufferPointer) throws(SQLiteError) -> Int64 {
    try withStatement(sql) { (statement) throws(SQLiteError) -> Int64 in
      let rc = sqlite3_bind_text(
        statement, 1, secret.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(secret.count),
        csqlite_transient())
      guard rc == SQLITE_OK else { throw error(rc, sql) }
      guard try step(statement, sql) else { return 0 }
      return sqlite3_column_int64(statement, 0)
    }
  }
}
