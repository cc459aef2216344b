import BeaconCore
import BeaconTestSupport
import BridgeDaemon
import Foundation
import Testing

/// The store opened to read only (`Store(readingOnly:)`, for pairs, replay, doctor and diagnose):
/// on a real read-only bind mount, with and without a write-ahead log, and on a writable
/// directory, where it must leave nothing behind.
@Suite(.serialized) struct ReadOnlyStoreTests {
  /// Every file in `dir` with its bytes.
  func contents(_ dir: String) throws -> [String: Data] {
    var out: [String: Data] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: dir) {
      out[name] = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))
    }
    return out
  }

  @discardableResult
  func command(_ path: String, _ arguments: [String]) async throws -> Int32 {
    try await runProcess(path, arguments).status
  }

  /// `source` bind-mounted read-only at a new mount point; `body` runs with it, and it is
  /// unmounted after, whatever happens.
  @discardableResult
  func withReadOnlyMount<T>(of source: String, _ body: (String) async throws -> T) async throws -> T {
    try #require(geteuid() == 0, "a bind mount needs root")
    let mountPoint = scratchPath("ro-mount")
    try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: mountPoint) }
    let bound = try await command("/bin/mount", ["--bind", source, mountPoint])
    try #require(bound == 0, "mount --bind failed")
    defer { _ = try? runProcessBlocking("/bin/umount", [mountPoint]) }
    let remounted = try await command("/bin/mount", ["-o", "remount,bind,ro", mountPoint])
    try #require(remounted == 0, "remount ro failed")
    // The mount is read-only indeed: this process (root) cannot create a file in it.
    #expect(!FileManager.default.createFile(atPath: mountPoint + "/probe", contents: Data()))
    return try await body(mountPoint)
  }

  @Test func aWritableDirectoryIsReadAndLeftAsItWas() async throws {
    let dir = try scratchDirectory("ro-store")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    do { try await Store(directory: dir).pair(Fixtures.vanPairing) }
    let before = try contents(dir)
    #expect(before.keys.sorted() == [Store.fileName])
    do {
      let store = try Store(readingOnly: dir)
      #expect(try await store.pairings() == [Fixtures.vanPairing])
      #expect(try await store.check() == "ok")
      _ = try await store.outboxSummary()
    }
    // No -wal, no -shm, the same bytes.
    #expect(try contents(dir) == before)
  }

  @Test func aReadOnlyMountIsRead() async throws {
    let dir = try scratchDirectory("ro-store")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    do { try await Store(directory: dir).pair(Fixtures.vanPairing) }
    try await withReadOnlyMount(of: dir) { mounted in
      // The store as the daemon writes it, opened for writing, fails here; read only, it reads.
      #expect(throws: StoreError.self) { try Store(directory: mounted) }
      let store = try Store(readingOnly: mounted)
      #expect(try await store.pairings() == [Fixtures.vanPairing])
      #expect(try await store.check() == "ok")
      #expect(try await store.outboxSummary().undelivered == 0)
    }
  }

  /// While a writer holds the store open, its last commit is in the write-ahead log, not in the
  /// main file: a read through the mount reads it too (`mode=ro`, through the existing -shm).
  @Test func aReadOnlyMountWithALogReadsTheLog() async throws {
    let dir = try scratchDirectory("ro-store")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let writer = try Store(directory: dir)
    try await writer.pair(Fixtures.vanPairing)
    let second = Pairing(uuid: Fixtures.fleet, major: 9, minor: nil, deviceId: "FLEET-9")
    try await writer.pair(second)
    #expect(FileManager.default.fileExists(atPath: dir + "/" + Store.fileName + "-wal"))
    try await withReadOnlyMount(of: dir) { mounted in
      let store = try Store(readingOnly: mounted)
      #expect(Set(try await store.pairings()) == [Fixtures.vanPairing, second])
    }
    withExtendedLifetime(writer) {}
  }

  /// A log without its index on a directory that cannot be written cannot be read: said, not
  /// read around (the main file alone would leave out the commits in the log).
  @Test func aLogWithoutItsIndexIsASentence() async throws {
    let dir = try scratchDirectory("ro-store")
    let copy = try scratchDirectory("ro-copy")
    defer {
      try? FileManager.default.removeItem(atPath: dir)
      try? FileManager.default.removeItem(atPath: copy)
    }
    let writer = try Store(directory: dir)
    try await writer.pair(Fixtures.vanPairing)
    for suffix in ["", "-wal"] {
      try FileManager.default.copyItem(
        atPath: dir + "/" + Store.fileName + suffix, toPath: copy + "/" + Store.fileName + suffix)
    }
    withExtendedLifetime(writer) {}
    try await withReadOnlyMount(of: copy) { mounted in
      #expect {
        try Store(readingOnly: mounted)
      } throws: { error in
        let text = (error as? StoreError)?.description ?? ""
        return text.contains("has a write-ahead log") && text.contains("cannot be written")
      }
    }
  }
}
