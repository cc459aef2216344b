import Foundation
import Testing

@testable import BridgeDaemon

/// What the idle daemon's services wait on instead of a period (issue 19).
@Suite struct DoorbellTests {
  @Test func aRingWhileNobodyWaitsIsKeptAsOne() async {
    let bell = Doorbell()
    bell.ring()
    bell.ring()
    await bell.wait()  // returns at once: the two rings were kept as one
    let second = Task { await bell.wait() }
    try? await Task.sleep(for: .milliseconds(50))
    bell.ring()
    await second.value
  }

  @Test func cancellingAWaiterReturnsIt() async {
    let bell = Doorbell()
    let waiter = Task { await bell.wait() }
    waiter.cancel()
    await waiter.value
  }

  /// inotify on a real directory: a write to a file with the prefix rings; a write to another
  /// file in the same directory does not.
  @Test func theDirectoryWatchRingsForItsFilesOnly() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("doorbell-\(UUID())").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let bell = Doorbell()
    let watch = try DirectoryWatch.start(directory, prefix: "store.sqlite", ringing: bell).get()
    defer { watch.stop() }

    try Data("log line\n".utf8).write(to: URL(fileURLWithPath: directory + "/daemon.log"))
    // inotify delivers within microseconds; 200 ms is ample for a ring that should not come.
    try await Task.sleep(for: .milliseconds(200))
    #expect(!bell.isRung, "a write to another file in the directory rang the bell")

    try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/store.sqlite-wal"))
    // 60 s: a hang guard; in the parallel suite a test can wait over 10 s for a thread.
    let deadline = ContinuousClock.now + .seconds(60)
    while !bell.isRung, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
    #expect(bell.isRung, "a write to store.sqlite-wal did not ring the bell within 60 s")
  }

  @Test func aMissingDirectoryIsAClearFailure() {
    let result = DirectoryWatch.start("/nonexistent/beaconbridge", ringing: Doorbell())
    guard case .failure(let error) = result else {
      Issue.record("watching a missing directory succeeded")
      return
    }
    #expect(error.description.contains("No such file"))
  }
}
