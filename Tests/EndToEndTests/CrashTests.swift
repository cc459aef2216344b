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

/// Issue "Trips reach the upload layer tagged, exactly once": SIGKILL the daemon at random
/// points while batches stream in, restart it, and check that the backend got every batch the
/// CLI acknowledged, tagged right, exactly once after de-duplication by key, and nothing that was
/// never sent. `BEACONBRIDGE_KILL_POINTS` sets how many kills (make soak raises it).
///
/// The same test runs against the MQTT sink and a real Mosquitto broker, which is also killed
/// with -9 and restarted half-way (once what it acknowledged has reached the subscriber: a broker
/// killed with -9 may lose what it had not yet saved or forwarded, which is the broker's promise,
/// not the daemon's).
@Suite(.tags(.process), .timeLimit(.minutes(10)))
struct CrashTests {
  /// What a sink delivered: each delivery's key and body.
  struct Delivery {
    var key: String
    var body: JSONValue
  }

  @Test(arguments: ["http", "mqtt"])
  func killNineWhileBatchesStreamInLosesNothing(sink: String) async throws {
    let killPoints = Int(ProcessInfo.processInfo.environment["BEACONBRIDGE_KILL_POINTS"] ?? "") ?? 60
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    // The backend fails a fifth of requests and drops a tenth, so batches wait in the outbox.
    let backend = try await FakeBackend(["--fail-rate", "0.2", "--drop-rate", "0.1", "--seed", "11"])
    let broker = sink == "mqtt" ? try MosquittoBroker() : nil
    try broker?.subscribe()
    let deliveries: @Sendable () -> [Delivery] = {
      guard let broker else {
        return backend.received().filter { $0.status == "200" }.compactMap { r in
          r.key.map { Delivery(key: $0, body: r.body) }
        }
      }
      return broker.messages().compactMap { message in
        guard case .object(var body) = message.payload, let key = body["idempotencyKey"]?.stringValue else {
          return nil
        }
        #expect(message.properties == "Idempotency-Key:\(key)")
        body["idempotencyKey"] = nil
        return Delivery(key: key, body: .object(body))
      }
    }
    let url =
      broker.map { "mqtt://127.0.0.1:\($0.port)\n[MQTT]\nClientId = crash-test" }
      ?? backend.url.absoluteString
    let dir = try scratchDirectory("crash")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    // No beacon in this test: trips take the fallback device ID at once.
    // URL last: an MQTT URL is followed by the [MQTT] section.
    let config = try fallbackConfiguration(
      in: dir,
      upload: """
        postRetryInitial = 0.05
        postRetryMax = 0.5
        Timeout = 5
        URL = \(url)
        """)
    let test = DaemonEndToEndTests()

    func startDaemon() throws -> Process {
      try launchDaemon(config: config, stateDirectory: dir, bus: fixture.bus.address)
    }
    func waitReady() async throws {
      try await waitUntil("the daemon answers status", timeout: .seconds(20)) {
        (try? await test.cli(["status", "--json"], bus: fixture.bus.address, dir: dir).status) == 0
      }
    }

    var generator = SeededGenerator(seed: 2026)
    var acknowledged: Set<Int> = []
    var attempted: Set<Int> = []
    var next = 0
    var daemon = try startDaemon()
    try await waitReady()
    var started = false
    @Sendable func undelivered() async -> Int64? {
      (try? await test.cli(["status", "--json"], bus: fixture.bus.address, dir: dir))
        .flatMap { try? JSONValue.parse(Data($0.stdout.utf8))["outbox"]?["undelivered"]?.intValue }
    }
    for point in 0..<killPoints {
      if let broker, point == killPoints / 2 {
        // Once the subscriber has everything the broker acknowledged: kill -9, and restart it
        // two kill points later; meanwhile batches wait in the outbox.
        let so = acknowledged.count
        try await waitUntil("the condition at this line", timeout: .seconds(60)) {
          await undelivered() == 0 && Set(deliveries().map(\.key)).count >= so
        }
        broker.kill()
      }
      if let broker, point == killPoints / 2 + 2 { try broker.start() }
      // Stream a few batches, then kill the daemon at a random moment, possibly mid-call.
      let burst = Int.random(in: 1...4, using: &generator)
      let killAfter = Double.random(in: 0.0...0.4, using: &generator)
      let pid = daemon.processIdentifier
      let killer = Task {
        try? await Task.sleep(for: .seconds(killAfter))
        kill(pid, SIGKILL)
      }
      for _ in 0..<burst {
        if !started {
          let start = try await test.cli(
            ["trip", "start", "--trip-id", "t1"], bus: fixture.bus.address, dir: dir)
          if start.status == 0 || start.stderr.contains("already started") { started = true } else { break }
        }
        let n = next
        next += 1
        attempted.insert(n)
        let events = #"[{"type":"braking","n":\#(n)}]"#
        let sent = try await test.cli(
          ["trip", "events", "--trip-id", "t1", "-"], bus: fixture.bus.address, dir: dir, stdin: events)
        if sent.status == 0 { acknowledged.insert(n) } else { break }
      }
      await killer.value
      daemon.waitUntilExit()
      daemon = try startDaemon()
      try await waitReady()
    }
    // Let the outbox drain, then stop cleanly.
    let acknowledgedCount = acknowledged.count
    try await waitUntil("the outbox drained", timeout: .seconds(90)) {
      await undelivered() == 0 && Set(deliveries().map(\.key)).count >= acknowledgedCount
    }
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon), "daemon did not exit in time")

    let delivered = deliveries()
    var byKey: [String: JSONValue] = [:]
    for request in delivered {
      let key = request.key
      if let earlier = byKey[key] {
        #expect(earlier == request.body, "key \(key) carried two different batches")
      }
      byKey[key] = request.body
    }
    var seen: [Int: Int] = [:]
    for body in byKey.values {
      #expect(body["deviceId"]?.stringValue == "DEPOT-7")
      for event in body["events"]?.arrayValue ?? [] {
        if let n = event["n"]?.intValue { seen[Int(n), default: 0] += 1 }
      }
    }
    let missing = acknowledged.subtracting(seen.keys)
    #expect(missing.isEmpty, "acknowledged but never delivered: \(missing.sorted())")
    #expect(
      seen.values.allSatisfy { $0 == 1 },
      "a batch was accepted twice under different keys: \(seen.filter { $0.value > 1 })")
    #expect(Set(seen.keys).isSubset(of: attempted), "the backend got batches nobody sent")
    print(
      "crash test (\(sink)): \(killPoints) kill points, \(attempted.count) batches sent, \(acknowledged.count) acknowledged, "
        + "\(byKey.count) delivered (after de-duplication of \(delivered.count) deliveries), \(missing.count) lost"
    )
  }
}
