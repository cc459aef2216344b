import BeaconTestSupport
import Foundation
import Testing

@testable import BridgeDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// What the idle daemon's services wait on instead of a period. A wait that never returned
/// would hang: the time limit fails it.
@Suite(.timeLimit(.minutes(1))) struct DoorbellTests {
  @Test func aRingWhileNobodyWaitsIsKeptAsOne() async {
    let bell = Doorbell()
    #expect(!bell.isRung)
    bell.ring()
    bell.ring()
    #expect(bell.isRung)
    await bell.wait()  // returns at once: the rings were kept
    #expect(!bell.isRung, "two rings were kept as two: one wait left one behind")
    // A waiter returns on the next ring, and takes it: whether it was already waiting (resumed by
    // the ring) or not yet (the ring kept for it), nothing is left over.
    let second = Task { await bell.wait() }
    await Task.yield()
    bell.ring()
    await second.value
    #expect(!bell.isRung, "the waiter did not take the ring")
  }

  @Test func cancellingAWaiterReturnsIt() async {
    let bell = Doorbell()
    let waiter = Task { await bell.wait() }
    waiter.cancel()
    await waiter.value
    // The cancellation's wake-up went to the cancelled waiter, not to the next one.
    #expect(!bell.isRung, "the cancelled wait left a ring behind")
    bell.ring()
    await bell.wait()
    #expect(!bell.isRung)
  }

  /// inotify on a real directory: a write to a file with the prefix rings the bell (through the
  /// watch's own thread).
  @Test func theDirectoryWatchRingsForItsFiles() async throws {
    let directory = try scratch("doorbell")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let bell = Doorbell()
    let watch = try DirectoryWatch.start(directory, prefix: "store.sqlite", ringing: bell).get()
    defer { watch.stop() }
    try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/store.sqlite-wal"))
    try await waitUntil("a write to store.sqlite-wal rang the bell") { bell.isRung }
  }

  /// The watch's filter over the kernel's own events: a write to another file in the directory
  /// does not match, a write to one with the prefix does. The events are read from an inotify
  /// descriptor of the test's own, queued by the kernel before each write returns, so nothing
  /// waits on time.
  @Test func theDirectoryWatchIgnoresOtherFiles() throws {
    let directory = try scratch("doorbell-filter")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
    try #require(fd >= 0)
    defer { close(fd) }
    let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_DELETE)
    try #require(inotify_add_watch(fd, directory, mask) >= 0)
    func events() -> ArraySlice<UInt8> {
      var buffer = [UInt8](repeating: 0, count: 4096)
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      return buffer[..<max(0, count)]
    }
    let prefix = Array("store.sqlite".utf8)

    try Data("log line\n".utf8).write(to: URL(fileURLWithPath: directory + "/daemon.log"))
    let other = events()
    #expect(!other.isEmpty, "the kernel reported no event for daemon.log")
    #expect(!DirectoryWatch.names(other, startingWith: prefix), "a write to daemon.log matched")

    try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/store.sqlite-wal"))
    let ours = events()
    #expect(DirectoryWatch.names(ours, startingWith: prefix), "a write to store.sqlite-wal did not match")
    #expect(DirectoryWatch.names(other, startingWith: []), "an empty prefix matches every event")
  }

  private func scratch(_ name: String) throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID())").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    return directory
  }

  @Test func aMissingDirectoryIsAClearFailure() {
    let result = DirectoryWatch.start("/nonexistent/beaconbridge", ringing: Doorbell())
    guard case .failure(let error) = result else {
      Issue.record("watching a missing directory succeeded")
      return
    }
    #expect(error.description.contains("no such file"))
  }
}
