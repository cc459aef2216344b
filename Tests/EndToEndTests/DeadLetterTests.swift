import BeaconCore
import BeaconTestSupport
import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A 4xx moves a batch to the dead letters, `doctor` shows it, and `trip retry` resends it.
@Suite(.tags(.process), .timeLimit(.minutes(5)))
struct DeadLetterTests {
  @Test func refusedBatchIsKeptShownAndRetried() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let backend = try await FakeBackend(["--script", "422"])
    let dir = try scratchDirectory("dead")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = try fallbackConfiguration(
      in: dir,
      upload: """
        URL = \(backend.url.absoluteString)
        """)
    let test = DaemonEndToEndTests()
    let bus = fixture.bus.address
    let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    try await waitUntil("the condition at this line", timeout: .seconds(20)) {
      (try? await test.cli(["status"], bus: bus, dir: dir).status) == 0
    }
    #expect(try await test.cli(["trip", "start", "--trip-id", "t1"], bus: bus, dir: dir).status == 0)
    #expect(
      try await test.cli(
        ["trip", "events", "--trip-id", "t1", "-"], bus: bus, dir: dir, stdin: #"[{"type":"poison"}]"#
      ).status
        == 0)
    try await waitUntil("the condition at this line") { backend.received().contains { $0.status == "422" } }
    try await waitUntil("the condition at this line") {
      let doctor = try await test.cli(
        ["doctor", "--json", "--config", config, "--state-dir", dir], bus: bus, dir: dir)
      let checks = (try? JSONValue.parse(Data(doctor.stdout.utf8)))?["checks"]?.arrayValue ?? []
      return checks.contains {
        $0["name"]?.stringValue == "dead letters" && $0["status"]?.stringValue == "warning"
      }
    }
    let retried = try await test.cli(["trip", "retry", "--trip-id", "t1"], bus: bus, dir: dir)
    #expect(retried.status == 0, "\(retried.stderr)")
    #expect(try JSONValue.parse(Data(retried.stdout.utf8))["delivered"]?.intValue == 1)
    let delivered = try #require(backend.received().first { $0.status == "200" })
    #expect(delivered.key == "t1#0")
    #expect(delivered.body["deviceId"]?.stringValue == "DEPOT-7")
    let status = try JSONValue.parse(
      Data(try await test.cli(["status", "--json"], bus: bus, dir: dir).stdout.utf8))
    #expect(status["outbox"]?["deadLetters"]?.intValue == 0)
    // The retry went through the bridge's upload state, as every post does: it counts as a
    // delivery in `status`.
    #expect(status["upload"]?["delivered"]?.intValue == 1, "\(status.compactText)")
    #expect(status["upload"]?["state"]?.stringValue == "delivering")
    #expect(status["upload"]?["deadLettered"]?.intValue == 1)
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon), "daemon did not exit in time")
  }
}
