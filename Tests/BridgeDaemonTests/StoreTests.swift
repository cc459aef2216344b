import BeaconCore
import BeaconTestSupport
import BridgeDaemon
import Foundation
import Testing

/// The store against a real SQLite file in a temporary directory.
@Suite struct StoreTests {
  func temporaryDirectory() -> String { scratchPath("store") }

  @Test func pairingsPersistAcrossReopen() async throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    do {
      let store = try Store(directory: dir)
      try await store.pair(Fixtures.vanPairing)
      try await store.pair(Pairing(uuid: Fixtures.fleet, major: 1, minor: nil, deviceId: "FLEET"))
    }
    let reopened = try Store(directory: dir)
    let pairings = try await reopened.pairings()
    #expect(pairings.map(\.deviceId) == ["FLEET", "UNIT-0042"])
    #expect(pairings.last == Fixtures.vanPairing)
    #expect(pairings.first?.minor == nil)
    #expect(try await reopened.check() == "ok")
  }

  @Test func pairingTheSameIdentityReplacesIt() async throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try Store(directory: dir)
    let wildcard = Pairing(uuid: Fixtures.fleet, major: 1, minor: nil, deviceId: "A")
    try await store.pair(wildcard)
    try await store.pair(Pairing(uuid: Fixtures.fleet, major: 1, minor: nil, deviceId: "B"))
    try await store.pair(Fixtures.vanPairing)
    try await store.pair(Pairing(uuid: Fixtures.fleet, major: 1, minor: 7, deviceId: "UNIT-0043"))
    #expect(try await store.pairings().map(\.deviceId) == ["B", "UNIT-0043"])
    #expect(try await store.unpair(deviceId: "B") == 1)
    #expect(try await store.unpair(deviceId: "B") == 0)
  }

  @Test func corruptFileIsReportedAndKept() throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let file = (dir as NSString).appendingPathComponent(Store.fileName)
    let garbage = Data(String(repeating: "this is not an SQLite database. ", count: 64).utf8)
    try garbage.write(to: URL(fileURLWithPath: file))
    #expect {
      _ = try Store(directory: dir)
    } throws: { error in
      guard let error = error as? StoreError else { return false }
      return error.code == .corrupt && error.description.contains("left as it is")
    }
    #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == garbage)
  }

  @Test func unwritableStateDirectoryIsAClearError() throws {
    #expect {
      _ = try Store(directory: "/proc/beaconbridge-cannot-exist")
    } throws: { error in
      (error as? StoreError)?.code == .cannotCreateDirectory
    }
  }

  /// Rows another tool wrote are read back through the identifier types: major 70000 is not
  /// truncated into beacon 4464, and a device ID with a newline never reaches a pairing.
  @Test func pairingsThatBreakTheRulesAreNotReadBack() async throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try Store(directory: dir)
    try await store.pair(Fixtures.vanPairing)
    let file = (dir as NSString).appendingPathComponent(Store.fileName)
    let uuid = Fixtures.fleet.uuidString
    let sqlite = try await runProcess(
      "/usr/bin/python3",
      [
        "-c",
        """
        import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); u=sys.argv[2]
        c.execute("INSERT INTO pairings (uuid, major, minor, device_id, label, created_at) VALUES (?, 70000, 1, 'BIG', NULL, 0)", (u,))
        c.execute("INSERT INTO pairings (uuid, major, minor, device_id, label, created_at) VALUES (?, 2, -7, 'NEG', NULL, 0)", (u,))
        c.execute("INSERT INTO pairings (uuid, major, minor, device_id, label, created_at) VALUES (?, 3, 3, ?, NULL, 0)", (u, "A\\nB"))
        c.commit()
        """,
        file, uuid,
      ])
    #expect(sqlite.status == 0, "\(sqlite.stderr)")
    #expect(try await store.pairings() == [Fixtures.vanPairing])
  }

  @Test func newerSchemaIsRefusedNotDowngraded() async throws {
    let dir = temporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    _ = try Store(directory: dir)
    let file = (dir as NSString).appendingPathComponent(Store.fileName)
    let sqlite = try await runProcess(
      "/usr/bin/python3",
      [
        "-c",
        "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version=99'); c.commit()",
        file,
      ])
    #expect(sqlite.status == 0, "\(sqlite.stderr)")
    #expect {
      _ = try Store(directory: dir)
    } throws: { error in
      (error as? StoreError)?.code == .newerSchema
    }
  }
}

@Suite struct LockedStoreTests {
  /// Another process holds the write lock past the busy timeout: a clear error, the file kept.
  @Test func lockedStoreIsAClearErrorAndKeepsTheFile() async throws {
    let dir = scratchPath("lock")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try Store(directory: dir)
    try await store.pair(Fixtures.vanPairing)
    let file = (dir as NSString).appendingPathComponent(Store.fileName)
    let holder = Process()
    holder.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    holder.arguments = [
      "-c",
      "import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(6)",
      file,
    ]
    let out = Pipe()
    holder.standardOutput = out
    try holder.run()
    defer { kill(holder.processIdentifier, SIGKILL) }
    _ = out.fileHandleForReading.readData(ofLength: 6)
    do {
      try await store.pair(Fixtures.otherVanPairing)
      Issue.record("a write went through an exclusive lock")
    } catch {
      #expect(error.code == .locked)
      #expect(error.description.contains("locked by another process"))
    }
    kill(holder.processIdentifier, SIGKILL)
    await holder.exited()
    #expect(try await store.pairings() == [Fixtures.vanPairing])
    #expect(FileManager.default.fileExists(atPath: file))
  }
}
