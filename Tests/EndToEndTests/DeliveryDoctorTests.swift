import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A sink that cannot take batches shows in `status` (`upload`) and in `doctor`'s "delivery" check,
/// in the sink's own words; once it takes them again, the waiting batches go and the check is ok.
/// Run against the real daemon, a real Mosquitto broker and a real HTTP server on loopback.
@Suite(.tags(.process), .timeLimit(.minutes(5)))
struct DeliveryDoctorTests {
  let test = DaemonEndToEndTests()

  func doctorCheck(_ config: String, dir: String, bus: String) async throws -> JSONValue? {
    let doctor = try await test.cli(
      ["doctor", "--json", "--config", config, "--state-dir", dir], bus: bus, dir: dir)
    let checks = (try? JSONValue.parse(Data(doctor.stdout.utf8)))?["checks"]?.arrayValue ?? []
    return checks.first { $0["name"]?.stringValue == "delivery" }
  }

  func upload(bus: String, dir: String) async throws -> JSONValue? {
    let status = try await test.cli(["status", "--json"], bus: bus, dir: dir)
    return (try? JSONValue.parse(Data(status.stdout.utf8)))?["upload"]
  }

  /// Starts a trip with two batches on a daemon whose `[Upload]` is `upload`.
  func startDaemonWithTrip(upload: String, dir: String, bus: String) async throws -> (Process, String) {
    let config = try fallbackConfiguration(
      in: dir,
      upload: """
        postRetryInitial = 0.2
        postRetryMax = 1
        Timeout = 3
        \(upload)
        """)
    let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus, log: dir + "/daemon.log")
    try await waitUntil("the condition at this line", timeout: .seconds(20)) {
      (try? await test.cli(["status"], bus: bus, dir: dir).status) == 0
    }
    let nothingYet = try #require(try await doctorCheck(config, dir: dir, bus: bus))
    #expect(nothingYet["status"]?.stringValue == "ok")
    #expect(nothingYet["detail"]?.stringValue?.contains("nothing posted") == true, "\(nothingYet)")
    #expect(try await test.cli(["trip", "start", "--trip-id", "t1"], bus: bus, dir: dir).status == 0)
    for batch in [#"[{"type":"a"}]"#, #"[{"type":"b"}]"#] {
      let sent = try await test.cli(
        ["trip", "events", "--trip-id", "t1", "-"], bus: bus, dir: dir, stdin: batch)
      #expect(sent.status == 0, "\(sent.stderr)")
    }
    return (daemon, config)
  }

  /// Waits until doctor's "delivery" check is critical (three failures in a row) and returns it.
  func criticalDelivery(_ config: String, dir: String, bus: String) async throws -> JSONValue? {
    try await waitUntil("doctor's delivery check critical") {
      try await doctorCheck(config, dir: dir, bus: bus)?["status"]?.stringValue == "critical"
    }
    return try await doctorCheck(config, dir: dir, bus: bus)
  }

  @Test func aRefusingBrokerIsNamedByDoctorAndNothingIsLost() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let bus = fixture.bus.address
    let dir = try scratchDirectory("delivery-mqtt")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let broker = try MosquittoBroker(user: ("bridge", "right-pass"))
    try broker.subscribe(arguments: ["-u", "bridge", "-P", "right-pass"])
    let password = try writeTokenFile("wrong-pass\n", to: dir + "/mqtt-password")
    let (daemon, config) = try await startDaemonWithTrip(
      upload: """
        URL = mqtt://127.0.0.1:\(broker.port)
        [MQTT]
        ClientId = delivery-test
        Username = bridge
        PasswordFile = \(password)
        """, dir: dir, bus: bus)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }

    let check = try #require(try await criticalDelivery(config, dir: dir, bus: bus))
    let detail = check["detail"]?.stringValue ?? ""
    #expect(detail.contains("the MQTT broker"), "\(detail)")
    #expect(detail.contains("refused the connection"), "\(detail)")
    #expect(detail.contains("Not authorized") || detail.contains("Bad user name or password"), "\(detail)")
    #expect(check["recommendation"]?.stringValue?.contains("PasswordFile") == true)
    let failing = try #require(try await upload(bus: bus, dir: dir))
    #expect(failing["state"]?.stringValue == "failing")
    #expect((failing["consecutiveFailures"]?.intValue ?? 0) >= 3)
    #expect(failing["delivered"]?.intValue == 0)
    #expect(broker.messages().isEmpty)
    let text = try await test.cli(["status"], bus: bus, dir: dir).stdout
    #expect(text.contains("Upload:        failing ("), "\(text)")
    #expect(text.contains("refused the connection"), "\(text)")

    // The right password: the client reconnects by itself and both batches go, in order.
    _ = try writeTokenFile("right-pass\n", to: password)
    do {
      try await waitUntil("both batches delivered", timeout: .seconds(60)) {
        broker.messages().count >= 2
      }
    } catch {
      Issue.record("upload: \(String(describing: (try? await upload(bus: bus, dir: dir)) ?? nil))")
      throw error
    }
    #expect(
      broker.messages().compactMap { $0.payload["idempotencyKey"]?.stringValue } == ["t1#0", "t1#1"])
    try await waitUntil("the condition at this line", timeout: .seconds(10)) {
      try await doctorCheck(config, dir: dir, bus: bus)?["status"] == .string("ok")
    }
    let ok = try #require(try await doctorCheck(config, dir: dir, bus: bus))
    #expect(ok["detail"]?.stringValue?.hasPrefix("2 batch(es) delivered to the MQTT broker") == true, "\(ok)")
    let delivering = try #require(try await upload(bus: bus, dir: dir))
    #expect(delivering["state"]?.stringValue == "delivering")
    #expect(delivering["lastError"] == .null)
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon), "daemon did not exit in time")
  }

  @Test func aBackendThatIsDownIsNamedByDoctorAndTheBatchesGoWhenItComes() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let bus = fixture.bus.address
    let dir = try scratchDirectory("delivery-http")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    // Nothing listens on the port yet: every post is refused by the kernel.
    let port = MosquittoBroker.freePort()
    let (daemon, config) = try await startDaemonWithTrip(
      upload: "URL = http://127.0.0.1:\(port)/trips", dir: dir, bus: bus)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }

    let check = try #require(try await criticalDelivery(config, dir: dir, bus: bus))
    let detail = check["detail"]?.stringValue ?? ""
    #expect(detail.contains("post(s) to the backend failed"), "\(detail)")
    #expect(detail.contains("127.0.0.1"), "\(detail)")
    #expect(detail.contains("nothing is lost"), "\(detail)")
    #expect(check["recommendation"]?.stringValue?.contains("[Upload] URL") == true)

    let backend = try await FakeBackend(["--port", "\(port)"])
    do {
      try await waitUntil("both batches delivered", timeout: .seconds(30)) {
        backend.received().filter { $0.status == "200" }.count >= 2
      }
    } catch {
      Issue.record("upload: \(String(describing: (try? await upload(bus: bus, dir: dir)) ?? nil))")
      throw error
    }
    #expect(backend.received().filter { $0.status == "200" }.compactMap(\.key) == ["t1#0", "t1#1"])
    try await waitUntil("the condition at this line", timeout: .seconds(10)) {
      try await doctorCheck(config, dir: dir, bus: bus)?["status"] == .string("ok")
    }
    let delivering = try #require(try await upload(bus: bus, dir: dir))
    #expect(delivering["state"]?.stringValue == "delivering")
    #expect(delivering["delivered"]?.intValue == 2)
    let text = try await test.cli(["status"], bus: bus, dir: dir).stdout
    #expect(text.contains("Upload:        delivering, 2 batch(es) sent"), "\(text)")
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon), "daemon did not exit in time")
  }
}
