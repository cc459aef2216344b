import BeaconTestSupport
import Foundation
import Testing

@testable import BridgeDaemon

/// What a user reads when SQLite fails: what failed and the fix in words, never the result code
/// or the statement (issue 28).
@Suite struct SQLiteWordingTests {
  /// A real SQLITE_FULL: the database may grow to two pages, and a row does not fit. The words
  /// are "the disk is full", as for ENOSPC, since that is what the user has to fix.
  @Test func aFullDatabaseSaysTheDiskIsFull() throws {
    let dir = try scratchDirectory("sqlite-full")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/full.sqlite"
    let database = try SQLiteDatabase(path: path, create: true)
    try database.execute("CREATE TABLE t (x TEXT)")
    try database.execute("PRAGMA max_page_count = 2")
    let big = String(repeating: "x", count: 64 * 1024)
    #expect {
      try database.query("INSERT INTO t VALUES (?)", [.text(big)])
    } throws: { error in
      guard let error = error as? SQLiteError else { return false }
      let store = StoreError(error, path: path)
      return error.description == "writing to it failed: the disk is full; free space on it"
        && store.description == "the store \(path): writing to it failed: the disk is full; free space on it"
    }
  }

  /// Whatever the code, the message holds no "SQLite code", no number and no SQL.
  @Test(arguments: [sqliteFullCode, 8, 10, 14, 23, 1, 21])
  func noCodeOrStatementReachesAUser(code: Int32) {
    let error = SQLiteError(code: code, message: "library words", context: "INSERT INTO batches VALUES (?)")
    let text = StoreError(error, path: "/var/lib/beaconbridge/beaconbridge.sqlite").description
    #expect(!text.contains("SQLite code"), "\(text)")
    #expect(!text.contains("INSERT"), "\(text)")
    #expect(!text.contains("(\(code))"), "\(text)")
  }
}

/// SQLITE_FULL, without importing the C module into the test.
let sqliteFullCode: Int32 = 13
