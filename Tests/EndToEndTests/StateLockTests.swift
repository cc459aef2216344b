import BeaconTestSupport
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// One owner per state directory (issue 28): real daemons on private buses.
@Suite(.tags(.process), .timeLimit(.minutes(3)))
struct StateLockTests {
  /// Two daemons on one state directory, each on its own bus (so the bus name cannot be what
  /// stops the second): the second refuses to start, naming the first one's PID, and the first
  /// runs on. Without the lock both restored the outbox and both posted it.
  @Test func aSecondDaemonOnOneStateDirectoryRefusesAndNamesTheFirst() async throws {
    let firstBus = try PrivateBus.start()
    defer { firstBus.stop() }
    let secondBus = try PrivateBus.start()
    defer { secondBus.stop() }
    let dir = try scratchDirectory("state-lock")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    try "".write(toFile: config, atomically: true, encoding: .utf8)
    let state = dir + "/state"
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: false)
    let first = try MonitoredDaemon(config: config, stateDirectory: state, bus: firstBus.address)
    try await waitUntil("READY=1 from the first daemon; log:\n\(first.log)", timeout: .seconds(20)) {
      first.received.contains("READY=1")
    }

    let secondLog = dir + "/second.log"
    let second = try launchDaemon(
      config: config, stateDirectory: state, bus: secondBus.address, log: secondLog)
    #expect(await waitForExit(second, seconds: 20), "the second daemon did not stop")
    let words = (try? String(contentsOfFile: secondLog, encoding: .utf8)) ?? ""
    #expect(second.terminationStatus == 1, "log:\n\(words)")
    #expect(
      words.contains("is in use by beaconbridge run (PID \(first.process.processIdentifier))"),
      "log:\n\(words)")
    #expect(first.process.isRunning, "the first daemon stopped:\n\(first.log)")
    #expect(await first.stop())
  }

  /// The configuration replaced by a FIFO, then SIGHUP: the reload refuses it at once (no read
  /// that waits for a writer), the old configuration stays, and SIGTERM stops the daemon.
  @Test func aFIFOConfigurationOnSIGHUPIsRefusedAndSIGTERMStillStops() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let dir = try scratchDirectory("fifo-hup")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    try "".write(toFile: config, atomically: true, encoding: .utf8)
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
    try await waitUntil("READY=1; log:\n\(daemon.log)", timeout: .seconds(20)) {
      daemon.received.contains("READY=1")
    }
    unlink(config)
    #expect(mkfifo(config, 0o600) == 0)
    kill(daemon.process.processIdentifier, SIGHUP)
    try await waitUntil("the reload refused; log:\n\(daemon.log)", timeout: .seconds(20)) {
      daemon.log.contains("configuration not reloaded")
    }
    #expect(
      daemon.log.contains("the old one stays: \(config): cannot read it: it is a FIFO, not a regular file"),
      "log:\n\(daemon.log)")
    let started = ContinuousClock.now
    #expect(await daemon.stop(), "log:\n\(daemon.log)")
    #expect(ContinuousClock.now - started < .seconds(5))
  }
}
