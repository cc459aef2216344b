import BeaconCore
import BeaconTestSupport
import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A datagram socket standing in for systemd's NOTIFY_SOCKET.
///
/// Like systemd, it reads all the time (a thread), so the daemon's datagrams never queue up.
final class NotifySocket: @unchecked Sendable {
  let path: String
  private let fd: Int32
  private let inbox = Inbox()

  /// What the reader thread shares with the socket's owner.
  final class Inbox: Sendable {
    let messages = Mutex<[String]>([])
    let stopping = Atomic<Bool>(false)
    let stopped = DispatchSemaphore(value: 0)
  }

  init() throws {
    path =
      FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString.prefix(8))")
      .path
    fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
    }
    let rc = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard rc == 0 else { throw POSIXError(.EADDRINUSE) }
    let thread = Thread { [fd, inbox] in
      var buffer = [UInt8](repeating: 0, count: 4096)
      while !inbox.stopping.load(ordering: .relaxed) {
        var probe = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&probe, 1, 50) > 0 else { continue }
        let n = recv(fd, &buffer, buffer.count, 0)
        if n > 0 { inbox.messages.withLock { $0.append(String(decoding: buffer[0..<n], as: UTF8.self)) } }
      }
      inbox.stopped.signal()
    }
    thread.start()
  }

  deinit {
    inbox.stopping.store(true, ordering: .relaxed)
    inbox.stopped.wait()
    close(fd)
    unlink(path)
  }

  /// The messages received since the last call.
  func drain() -> [String] {
    inbox.messages.withLock { taken in
      defer { taken.removeAll() }
      return taken
    }
  }
}

/// Tier 3 (docs/DESIGN.md, Tests): the daemon end to end on a private bus with the dbusmock BlueZ.
@Suite(.tags(.process), .timeLimit(.minutes(5)))
struct DaemonEndToEndTests {
  func cli(_ arguments: [String], bus: String, dir: String, stdin: String? = nil) async throws -> ProcessRun {
    try await runProcess(
      ScanCommandTests.binary, arguments,
      environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus, "BEACONBRIDGE_STATE_DIR": dir], stdin: stdin ?? "")
  }

  @Test func statusWithoutADaemonSaysSo() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let result = try await cli(["status"], bus: bus.address, dir: "/tmp")
    #expect(result.status == 1)
    #expect(result.stderr.contains("daemon is not running"), "\(result.stderr)")
  }

  @Test func readyWatchdogPairingReloadAndStop() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let notify = try NotifySocket()
    let dir = try scratchDirectory("daemon")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let backend = try await FakeBackend(["--script", "503"])
    let config = dir + "/beaconbridge.conf"
    let upload = "[Upload]\nURL = \(backend.url.absoluteString)\npostRetryInitial = 0.2\n"
    try "[ActiveBeacon]\ndwellSeconds = 0.5\n\(upload)".write(
      toFile: config, atomically: true, encoding: .utf8)

    let stderrPath = dir + "/daemon.log"
    let daemon = try launchDaemon(
      config: config, stateDirectory: dir, bus: fixture.bus.address,
      environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"], log: stderrPath)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    let log: @Sendable () -> String = { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
    let messages = Mutex<[String]>([])
    let received: @Sendable () -> [String] = {
      messages.withLock {
        $0 += notify.drain()
        return $0
      }
    }

    try await waitUntil("daemon log:\n\(log())") { received().contains("READY=1") }
    try await waitUntil("the condition at this line") { received().filter { $0 == "WATCHDOG=1" }.count >= 2 }
    try await waitUntil("the condition at this line") {
      received().contains { $0.hasPrefix("STATUS=scanning (bluez") }
    }
    #expect(try await fixture.adapterCalls("hci0").contains("StartDiscovery"))

    // Without the daemon's bus the CLI would write the store itself: the daemon owns the state
    // directory (StateLock), so that write is refused, naming the daemon's PID, and changes nothing.
    let pairArguments = [
      "pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--major", "1", "--minor", "7", "--device-id",
      "UNIT-0042",
      "--state-dir", dir,
    ]
    let offline = try await cli(pairArguments, bus: "unix:path=/nonexistent/bus", dir: dir)
    #expect(offline.status == 1)
    #expect(
      offline.stderr.contains("is in use by beaconbridge run (PID \(daemon.processIdentifier))"),
      "\(offline.stderr)")
    // Through the daemon: its Pair method writes the store and the bridge follows it.
    let pair = try await cli(pairArguments, bus: fixture.bus.address, dir: dir)
    #expect(pair.status == 0, "\(pair.stderr)")
    let device = try await fixture.addDevice("hci0", beaconAddress.description)
    for _ in 0..<3 {
      try await fixture.advertise(
        device, ["ManufacturerData": iBeaconManufacturerData(), "RSSI": .int16(-60)])
      try await Task.sleep(for: .milliseconds(400))
    }
    try await waitUntil("daemon log:\n\(log())") { log().contains("active beacon: UNIT-0042") }
    try await waitUntil("the condition at this line") {
      received().contains { $0.contains("active: UNIT-0042") }
    }

    // The D-Bus API through the CLI: status, then a trip tagged and uploaded.
    let status = try await cli(["status", "--json"], bus: fixture.bus.address, dir: dir)
    #expect(status.status == 0, "\(status.stderr)")
    let state = try JSONValue.parse(Data(status.stdout.utf8))
    #expect(state["activeBeacon"]?["deviceId"]?.stringValue == "UNIT-0042")
    #expect(state["scanning"]?.stringValue?.hasPrefix("bluez") == true)
    let started = try await cli(["trip", "start", "--trip-id", "t1"], bus: fixture.bus.address, dir: dir)
    #expect(started.status == 0, "\(started.stderr)")
    #expect(try JSONValue.parse(Data(started.stdout.utf8))["deviceId"]?.stringValue == "UNIT-0042")
    let events = #"[{"type":"braking","at":12.5,"g":0.41},{"type":"somethingNew","x":[1,2]}]"#
    let sent = try await cli(
      ["trip", "events", "--trip-id", "t1", "-"], bus: fixture.bus.address, dir: dir, stdin: events)
    #expect(sent.status == 0, "\(sent.stderr)")
    let bad = try await cli(
      ["trip", "events", "--trip-id", "nope", "-"], bus: fixture.bus.address, dir: dir, stdin: events)
    #expect(bad.status == 1)
    #expect(bad.stderr.contains("no trip nope"), "\(bad.stderr)")
    // The backend fails the first POST (503); the retry delivers it.
    try await waitUntil("daemon log:\n\(log())") { backend.received().contains { $0.status == "200" } }
    let delivered = try #require(backend.received().first { $0.status == "200" })
    #expect(delivered.body["deviceId"]?.stringValue == "UNIT-0042")
    #expect(delivered.body["events"]?.arrayValue?.count == 2)
    #expect(delivered.body["events"]?.arrayValue?.first?["g"] == .double(0.41))
    #expect(delivered.key == "t1#0")
    #expect(
      try await cli(["trip", "end", "--trip-id", "t1"], bus: fixture.bus.address, dir: dir).status == 0)
    // pair, pairs and unpair through the daemon's API when it runs.
    let paired = try await cli(
      [
        "pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--major", "1", "--minor", "9",
        "--device-id",
        "UNIT-0099",
      ], bus: fixture.bus.address, dir: dir)
    #expect(paired.status == 0, "\(paired.stderr)")
    let listed = try JSONValue.parse(
      Data(try await cli(["pairs", "--json"], bus: fixture.bus.address, dir: dir).stdout.utf8))
    #expect(
      listed.arrayValue?.compactMap { $0["deviceId"]?.stringValue }.sorted() == ["UNIT-0042", "UNIT-0099"])
    let unpaired = try await cli(
      ["unpair", "--device-id", "UNIT-0099", "--json"], bus: fixture.bus.address, dir: dir)
    #expect(try JSONValue.parse(Data(unpaired.stdout.utf8))["removed"]?.intValue == 1)
    let doctor = try await cli(
      ["doctor", "--json", "--config", config, "--state-dir", dir], bus: fixture.bus.address, dir: dir)
    let health = try JSONValue.parse(Data(doctor.stdout.utf8))
    let checks = health["checks"]?.arrayValue ?? []
    let byName = { (name: String) in checks.first { $0["name"]?.stringValue == name }?["status"]?.stringValue
    }
    #expect(byName("bluetoothd") == "ok", "\(doctor.stdout)")
    #expect(byName("adapter") == "ok")
    #expect(byName("scanning") == "ok")
    #expect(byName("active beacon") == "ok")
    #expect(byName("configuration") == "ok")

    // SIGHUP with a bad file keeps the old configuration; a good one is taken.
    try "[ActiveBeacon]\ndwellSeconds = soon\n".write(toFile: config, atomically: true, encoding: .utf8)
    kill(daemon.processIdentifier, SIGHUP)
    try await waitUntil("the condition at this line") {
      log().contains("configuration not reloaded, the old one stays")
    }
    try "[ActiveBeacon]\ndwellSeconds = 1\n".write(toFile: config, atomically: true, encoding: .utf8)
    kill(daemon.processIdentifier, SIGHUP)
    try await waitUntil("the condition at this line") { log().contains("configuration reloaded") }

    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon), "daemon did not exit in time")
    #expect(daemon.terminationReason == .exit)
    #expect(daemon.terminationStatus == 0, "daemon log:\n\(log())")
    #expect(received().contains("STOPPING=1"))
    try await waitUntil("the condition at this line") {
      try await fixture.adapterCalls("hci0").contains("StopDiscovery")
    }
  }
}
