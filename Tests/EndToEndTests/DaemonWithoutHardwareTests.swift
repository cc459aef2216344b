import BeaconCore
import BeaconTestSupport
import BlueZ
import BlueZTestSupport
import DBusTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `beaconbridge run` as systemd runs it: its NOTIFY_SOCKET read all the time, its stderr in a
/// file.
final class MonitoredDaemon: Sendable {
  let process: Process
  let notify: NotifySocket
  let logPath: String
  private let messages = Mutex<[String]>([])

  init(
    config: String, stateDirectory: String, bus: String, watchdogUSec: Int? = nil,
    extra: [String: String] = [:]
  ) throws {
    notify = try NotifySocket()
    logPath = stateDirectory + "/daemon.log"
    var environment = extra.merging(["NOTIFY_SOCKET": notify.path]) { $1 }
    if let watchdogUSec { environment["WATCHDOG_USEC"] = String(watchdogUSec) }
    process = try launchDaemon(
      config: config, stateDirectory: stateDirectory, bus: bus, environment: environment, log: logPath)
  }

  deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }

  /// Everything the daemon wrote to stderr so far.
  var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

  /// Every NOTIFY_SOCKET datagram received so far.
  var received: [String] {
    messages.withLock {
      $0 += notify.drain()
      return $0
    }
  }

  /// The last STATUS= text.
  var status: String? { received.last { $0.hasPrefix("STATUS=") }.map { String($0.dropFirst(7)) } }

  /// SIGTERM, then waits; true when it exited 0 in time.
  func stop() async -> Bool {
    kill(process.processIdentifier, SIGTERM)
    guard await waitForExit(process) else { return false }
    return process.terminationReason == .exit && process.terminationStatus == 0
  }
}

/// READY without an adapter: the daemon serves its API, trips and their deadlines as
/// soon as its store is open, and scans once the hardware is there.
@Suite(.tags(.process), .timeLimit(.minutes(3)))
struct DaemonWithoutHardwareTests {
  let cli = DaemonEndToEndTests()

  /// systemd may stop the unit the moment it said READY=1: that is a clean stop (exit 0), not a
  /// death by SIGTERM, and the store it opened is intact. Twelve rounds: the signal was once lost
  /// (SIG_IGN before libdispatch's handler) in about one start in fifteen, and the daemon ran on.
  @Test(arguments: 0..<12)
  func aStopRightAfterReadyIsACleanExit(round: Int) async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let dir = try scratchDirectory("ready-stop")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    try "".write(toFile: config, atomically: true, encoding: .utf8)
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
    try await waitUntil("READY=1", timeout: .seconds(20), poll: .milliseconds(1)) {
      daemon.notify.drain().contains("READY=1")
    }
    #expect(await daemon.stop(), "round \(round): \(daemon.process.terminationReason), log:\n\(daemon.log)")
    #expect(FileManager.default.fileExists(atPath: dir + "/beaconbridge.sqlite"))
  }

  /// A stop during start-up waits for the daemon's signal handling, then stops it cleanly: it is
  /// neither lost nor a death by SIGTERM. The bus is frozen, so the daemon is held after opening
  /// its store ("armed") and before it owns its name, where it is when the signal comes.
  @Test func aStopDuringStartUpWaitsAndIsACleanExit() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let dir = try scratchDirectory("early-stop")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    try "".write(toFile: config, atomically: true, encoding: .utf8)
    bus.freeze()
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
    try await waitUntil("armed; log:\n\(daemon.log)", timeout: .seconds(20)) { daemon.log.contains("armed") }
    // The signal comes while the frozen bus holds the daemon in its start-up. Had it killed the
    // daemon or been lost, the exit below would be a death by SIGTERM or none at all; a clean
    // exit that logs the signal proves it waited for the stream.
    kill(daemon.process.processIdentifier, SIGTERM)
    bus.thaw()
    #expect(await waitForExit(daemon.process), "log:\n\(daemon.log)")
    #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0)
    #expect(daemon.log.contains("stopping (signal 15)"), "log:\n\(daemon.log)")
  }

  @Test func withoutBluetoothdItIsReadyAndTripDeadlinesRun() async throws {
    // A bus with no org.bluez at all: bluetoothd is not installed or not running.
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let dir = try scratchDirectory("nobluez")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let backend = try await FakeBackend([])
    let config = dir + "/beaconbridge.conf"
    try """
    [Trips]
    lateWindow = 1
    unresolvedPolicy = fallback
    fallbackDeviceId = UNIT-FALLBACK
    [Upload]
    URL = \(backend.url.absoluteString)
    """.write(toFile: config, atomically: true, encoding: .utf8)
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)

    try await waitUntil("daemon log:\n\(daemon.log)") { daemon.received.contains("READY=1") }
    // With no controller in the kernel either (this machine), the adapter is what is missing:
    // Debian starts bluetoothd only once one appears.
    let expected =
      KernelAdapters.names().isEmpty
      ? "waiting for an adapter (none on this machine" : "waiting for bluetoothd"
    try await waitUntil("STATUS=\(daemon.status ?? "none"); daemon log:\n\(daemon.log)") {
      daemon.status?.contains(expected) == true
    }
    let status = try await cli.cli(["status", "--json"], bus: bus.address, dir: dir)
    #expect(status.status == 0, "\(status.stderr)")
    let state = try JSONValue.parse(Data(status.stdout.utf8))
    #expect(state["scanning"] == .null)
    #expect(state["scan"]?["state"]?.stringValue == "waiting")

    // A trip with no beacon: its late window (1 s) ends with no source running, and the fallback
    // tags and uploads it before the trip ends.
    #expect(try await cli.cli(["trip", "start", "--trip-id", "t1"], bus: bus.address, dir: dir).status == 0)
    let sent = try await cli.cli(
      ["trip", "events", "--trip-id", "t1", "-"], bus: bus.address, dir: dir, stdin: #"[{"type":"braking"}]"#)
    #expect(sent.status == 0, "\(sent.stderr)")
    try await waitUntil("daemon log:\n\(daemon.log)", timeout: .seconds(20)) {
      backend.received().contains { $0.status == "200" }
    }
    #expect(backend.received().first?.body["deviceId"]?.stringValue == "UNIT-FALLBACK")

    #expect(await daemon.stop(), "daemon log:\n\(daemon.log)")
    #expect(!daemon.log.contains("restarting it"), "a stop is not a scan that ended:\n\(daemon.log)")
  }

  @Test func withoutAnAdapterItIsReadyAndScansWhenOneAppears() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    let dir = try scratchDirectory("noadapter")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    try "".write(toFile: config, atomically: true, encoding: .utf8)
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: fixture.bus.address)

    try await waitUntil("daemon log:\n\(daemon.log)") { daemon.received.contains("READY=1") }
    try await waitUntil("STATUS=\(daemon.status ?? "none"); daemon log:\n\(daemon.log)") {
      daemon.status?.contains("waiting for an adapter") == true
    }
    let doctor = try await cli.cli(
      ["doctor", "--json", "--config", config, "--state-dir", dir], bus: fixture.bus.address, dir: dir)
    let checks = try JSONValue.parse(Data(doctor.stdout.utf8))["checks"]?.arrayValue ?? []
    let scanning = try #require(checks.first { $0["name"]?.stringValue == "scanning" }, "\(doctor.stdout)")
    #expect(scanning["status"]?.stringValue == "critical")
    #expect(scanning["detail"]?.stringValue?.contains("waiting for an adapter") == true, "\(scanning)")

    // The adapter appears (udev would have started the unit; here it already runs): discovery
    // starts by itself, without a restart or a backoff.
    try await fixture.addAdapter("hci0")
    try await waitUntil("STATUS=\(daemon.status ?? "none"); daemon log:\n\(daemon.log)", timeout: .seconds(5))
    { daemon.status?.hasPrefix("scanning (bluez") == true }
    #expect(try await fixture.adapterCalls("hci0").contains("StartDiscovery"))
    #expect(!daemon.log.contains("cannot scan"), "daemon log:\n\(daemon.log)")

    // The adapter goes away: STATUS= says so instead of still "scanning", and it comes back.
    try await fixture.removeAdapter("hci0")
    try await waitUntil(
      "STATUS=\(daemon.status ?? "none"); daemon log:\n\(daemon.log)", timeout: .seconds(10)
    ) { daemon.status?.contains("waiting for an adapter") == true }
    try await fixture.addAdapter("hci0")
    try await waitUntil(
      "STATUS=\(daemon.status ?? "none"); daemon log:\n\(daemon.log)", timeout: .seconds(10)
    ) { daemon.status?.hasPrefix("scanning (bluez") == true }

    #expect(await daemon.stop(), "daemon log:\n\(daemon.log)")
    #expect(!daemon.log.contains("restarting it"), "daemon log:\n\(daemon.log)")
  }
}
