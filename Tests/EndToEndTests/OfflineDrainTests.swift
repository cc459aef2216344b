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

/// The backend is down for the whole run; batches wait in the outbox; when it comes back they
/// all drain, in order. Prints the drain rate (a measurement, not an assertion).
@Suite(.tags(.process), .timeLimit(.minutes(3)))
struct OfflineDrainTests {
  @Test func outboxDrainsInOrderWhenTheBackendComesBack() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    // Learn a free port, then leave it closed: the backend is down.
    let port = try await FakeBackend().port
    let dir = try scratchDirectory("drain")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    // A token of this test's own: a stray post from another test's daemon to a reused port is
    // refused (401) and never counted as a delivery here.
    let token = "drain-\(UUID().uuidString)"
    let tokenFile = try writeTokenFile(token + "\n", to: dir + "/token")
    let config = try fallbackConfiguration(
      in: dir,
      upload: """
        TokenFile = \(tokenFile)
        URL = http://127.0.0.1:\(port)/trips
        postRetryInitial = 0.1
        postRetryMax = 0.5
        Timeout = 5
        """)
    let test = DaemonEndToEndTests()
    let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: fixture.bus.address)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    try await waitUntil("the condition at this line", timeout: .seconds(20)) {
      (try? await test.cli(["status"], bus: fixture.bus.address, dir: dir).status) == 0
    }
    #expect(
      try await test.cli(["trip", "start", "--trip-id", "t1"], bus: fixture.bus.address, dir: dir).status == 0
    )
    let count = 100
    for n in 0..<count {
      let sent = try await test.cli(
        ["trip", "events", "--trip-id", "t1", "-"], bus: fixture.bus.address, dir: dir,
        stdin: #"[{"type":"braking","n":\#(n)}]"#)
      #expect(sent.status == 0)
    }
    // Down the whole time: nothing delivered, everything waiting.
    let waiting = try JSONValue.parse(
      Data(try await test.cli(["status", "--json"], bus: fixture.bus.address, dir: dir).stdout.utf8))
    #expect(waiting["outbox"]?["undelivered"]?.intValue == Int64(count))

    let backend = try await FakeBackend(["--port", String(port), "--token", token])
    let back = ContinuousClock.now
    try await waitUntil("the condition at this line", timeout: .seconds(120)) {
      backend.received().filter { $0.status == "200" }.count >= count
    }
    let elapsed = back.duration(to: .now)
    let sequence = backend.received().filter { $0.status == "200" }.compactMap {
      $0.body["sequence"]?.intValue
    }
    #expect(sequence == (0..<Int64(count)).map { $0 })
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print(
      "offline drain: \(count) batches in \(String(format: "%.2f", seconds)) s after the backend came back "
        + "(\(String(format: "%.0f", Double(count) / seconds)) batches/s, including the wait for the next retry)"
    )
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon), "daemon did not exit in time")
    #expect(daemon.terminationStatus == 0)
  }
}
