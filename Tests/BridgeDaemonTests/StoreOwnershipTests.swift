import BeaconCore
import BeaconTestSupport
import BridgeDaemon
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The store writes only to a file it made (application_id 0x42424252, "BBBR"): a foreign
/// SQLite database is refused and left byte for byte unchanged, with no sidecar file left;
/// stores made before the id open and get it.
@Suite struct StoreOwnershipTests {
  /// Runs Python's sqlite3 on the store file (another program's database, or an old store).
  func python(_ script: String, _ file: String) async throws {
    let run = try await runProcess(
      "/usr/bin/python3",
      [
        "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); " + script + "; c.commit(); c.close()",
        file,
      ])
    #expect(run.status == 0, "python: \(script): \(run.stderr)")
  }

  /// `PRAGMA application_id` as another reader sees it (the write-ahead log included).
  func applicationID(_ file: String) async throws -> UInt32 {
    let text = try await runProcess(
      "/usr/bin/python3",
      [
        "-c",
        "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA application_id').fetchone()[0])",
        file,
      ]
    ).stdout
    return try #require(
      Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)).map { UInt32(bitPattern: $0) },
      "python printed \(text)")
  }

  /// Starts Python's sqlite3 on the store file with `script`, which prints `ready` once it holds
  /// the database as the test needs; returns once it has. The caller ends it (`end`).
  func holder(_ script: String, _ file: String) throws -> Process {
    let holder = Process()
    holder.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    holder.arguments = ["-c", script, file]
    let out = Pipe()
    holder.standardOutput = out
    try holder.run()
    #expect(out.fileHandleForReading.readData(ofLength: 5) == Data("ready".utf8))
    return holder
  }

  func end(_ holder: Process) {
    kill(holder.processIdentifier, SIGKILL)
    holder.waitUntilExit()
  }

  func setUp() throws -> (dir: String, file: String) {
    let dir = try scratchDirectory("owner")
    return (dir, dir + "/" + Store.fileName)
  }

  static let foreign: [(String, String)] = [
    (
      "c.execute('CREATE TABLE customers (id INTEGER, name TEXT)'); c.execute(\"INSERT INTO customers VALUES (1, 'x')\")",
      "tables customers"
    ),
    (
      "c.execute('PRAGMA journal_mode=WAL'); c.execute('CREATE TABLE notes (t TEXT)'); c.execute(\"INSERT INTO notes VALUES ('n')\")",
      "tables notes"
    ),
    (
      "c.execute('PRAGMA application_id=1234'); c.execute('CREATE TABLE pairings (x)')",
      "application_id is 0x4d2"
    ),
    // Our table names, but not our version's set.
    (
      "c.execute('CREATE TABLE pairings (x)'); c.execute('CREATE TABLE extra (y)'); c.execute('PRAGMA user_version=1')",
      "tables extra, pairings"
    ),
    ("c.execute('PRAGMA user_version=7')", "user_version 7"),
  ]

  @Test(arguments: 0..<foreign.count)
  func foreignDatabaseIsRefusedAndUnchanged(_ index: Int) async throws {
    let (script, why) = Self.foreign[index]
    let (dir, file) = try setUp()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try await python(script, file)
    let before = try Data(contentsOf: URL(fileURLWithPath: file))
    let listing = try FileManager.default.contentsOfDirectory(atPath: dir)
    let modified = try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date
    #expect {
      _ = try Store(directory: dir)
    } throws: { error in
      guard let error = error as? StoreError else { return false }
      return error.code == .foreign && error.description.contains("not a beaconbridge store")
        && error.description.contains(why) && error.description.contains("left unchanged")
    }
    #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before, "the file changed")
    #expect(try FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date == modified)
    // No -wal, -shm or -journal left beside it.
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == listing.sorted())
  }

  /// Another program has the database open in WAL mode, its tables still only in the -wal file:
  /// the check reads them (read-only) and refuses; neither the file nor its -wal changes.
  @Test func foreignDatabaseInUseWithItsLogIsRefusedAndUnchanged() throws {
    let (dir, file) = try setUp()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let holder = try holder(
      "import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=WAL'); c.execute('CREATE TABLE notes (t TEXT)'); c.execute(\"INSERT INTO notes VALUES ('n')\"); c.commit(); print('ready', flush=True); time.sleep(30)",
      file)
    defer { end(holder) }
    let before = try Data(contentsOf: URL(fileURLWithPath: file))
    let log = try Data(contentsOf: URL(fileURLWithPath: file + "-wal"))
    #expect(!log.isEmpty)
    #expect {
      _ = try Store(directory: dir)
    } throws: { error in
      (error as? StoreError)?.code == .foreign && "\(error)".contains("tables notes")
    }
    #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before)
    #expect(try Data(contentsOf: URL(fileURLWithPath: file + "-wal")) == log)
  }

  /// Our store while another connection has it (here, held exclusively for a moment, as a
  /// connection holds it while it checkpoints on close), and its id still only in the -wal
  /// file: the check waits for the file and reads the id through SQLite, so our own store is
  /// never taken for another program's.
  @Test func storeHeldForAMomentWithItsIDInTheLogOpens() async throws {
    let (dir, file) = try setUp()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    do {
      let store = try Store(directory: dir)
      try await store.pair(Fixtures.vanPairing)
    }
    let holder = try holder(
      """
      import sqlite3,sys,time
      c=sqlite3.connect(sys.argv[1], isolation_level=None)
      c.execute('PRAGMA application_id=0'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)')
      c.execute('PRAGMA wal_autocheckpoint=0'); c.execute('PRAGMA locking_mode=EXCLUSIVE')
      c.execute('BEGIN EXCLUSIVE'); c.execute('PRAGMA application_id=\(Store.applicationID)'); c.execute('COMMIT')
      print('ready', flush=True); time.sleep(0.3); c.close()
      """, file)
    defer { end(holder) }
    // The file's own header says 0; the id is in the log.
    let header = try Data(contentsOf: URL(fileURLWithPath: file)).prefix(72).suffix(4)
    #expect(Array(header) == [0, 0, 0, 0])
    let store = try Store(directory: dir)
    #expect(try await store.pairings().map(\.deviceId) == ["UNIT-0042"])
    #expect(try await applicationID(file) == 0x4242_4252)
  }

  @Test func newStoreCarriesTheID() async throws {
    let (dir, file) = try setUp()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    _ = try Store(directory: dir)
    #expect(try await applicationID(file) == 0x4242_4252)
    #expect(UInt32(bitPattern: Store.applicationID) == 0x4242_4252)
  }

  /// A store from before the id: the current schema (version 3) with id 0, and a version-1 store
  /// made as that version made it. Both open, keep their pairings, and get the id.
  @Test(arguments: [false, true])
  func storesFromEarlierVersionsOpenAndGetTheID(versionOne: Bool) async throws {
    let (dir, file) = try setUp()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    if versionOne {
      try await python(
        """
        c.execute('CREATE TABLE pairings (uuid TEXT NOT NULL, major INTEGER, minor INTEGER, device_id TEXT NOT NULL, label TEXT, created_at REAL NOT NULL, PRIMARY KEY (uuid, major, minor))'); c.execute("INSERT INTO pairings VALUES ('\(Fixtures.fleet.uuidString)', 1, 7, 'UNIT-0042', 'van 7', 0)"); c.execute('PRAGMA user_version=1')
        """, file)
    } else {
      do {
        let store = try Store(directory: dir)
        try await store.pair(Fixtures.vanPairing)
      }
      try await python("c.execute('PRAGMA application_id=0')", file)
    }
    #expect(try await applicationID(file) == 0)
    let store = try Store(directory: dir)
    #expect(try await store.pairings().map(\.deviceId) == ["UNIT-0042"])
    #expect(try await applicationID(file) == 0x4242_4252)
    #expect(try await store.check() == "ok")
  }

  /// An empty SQLite database (no tables, no version) and an empty file are taken over.
  @Test(arguments: [false, true])
  func emptyDatabaseIsTakenOver(zeroBytes: Bool) async throws {
    let (dir, file) = try setUp()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    if zeroBytes {
      #expect(FileManager.default.createFile(atPath: file, contents: Data()))
    } else {
      try await python("c.execute('CREATE TABLE t (x)'); c.execute('DROP TABLE t')", file)
    }
    let store = try Store(directory: dir)
    try await store.pair(Fixtures.vanPairing)
    #expect(try await applicationID(file) == 0x4242_4252)
  }
}
