import BeaconCore
import BeaconTestSupport
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A stop takes at most 5 s, whatever the broker does (docs/upload.md "MQTT", docs/fleet.md
/// "Presence"). The broker here is a real Mosquitto behind Tests/Support/mqtt_proxy.py, which
/// passes everything but the PUBACKs: it takes every message and never acknowledges one. The
/// upload's `Timeout` is the default 30 s, so a stop that waited for the publish would show it.
@Suite(.tags(.process), .serialized, .timeLimit(.minutes(3)))
struct StopTimingTests {
  let test = DaemonEndToEndTests()

  /// A daemon with no beacon (trips take DEPOT-7), uploading and run from the fleet over `port`.
  static func configuration(in dir: String, port: Int) throws -> String {
    // URL last: an MQTT URL is followed by the [MQTT] section.
    try fallbackConfiguration(
      in: dir,
      upload: """
        postRetryInitial = 0.2
        postRetryMax = 1
        URL = mqtt://127.0.0.1:\(port)
        [MQTT]
        ClientId = stop-box
        [Fleet]
        BoxId = stop-box
        """)
  }

  /// Starts `trip events` without waiting for it: in realtime mode its call may wait for the
  /// post, which the broker never acknowledges.
  func sendEvents(trip: String, bus: String, dir: String) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: ScanCommandTests.binary)
    process.arguments = ["trip", "events", "--trip-id", trip, "-"]
    process.environment = ProcessInfo.processInfo.environment.merging([
      "DBUS_SYSTEM_BUS_ADDRESS": bus, "BEACONBRIDGE_STATE_DIR": dir,
    ]) { $1 }
    let input = Pipe()
    process.standardInput = input
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    input.fileHandleForWriting.write(Data(#"[{"type":"speed","value":42}]"#.utf8))
    try input.fileHandleForWriting.close()
    return process
  }

  func keys(_ broker: MosquittoBroker) -> [String] {
    broker.messages().compactMap { $0.payload["idempotencyKey"]?.stringValue }
  }

  /// SIGTERM while a batch's publish waits for a PUBACK that never comes: the daemon exits 0
  /// within 5 s, having abandoned the publish (and sent the clean offline message, which the
  /// broker took but did not acknowledge either). Restarted against the broker itself, it sends
  /// the batch again from its outbox: the subscriber has it once by key.
  @Test func aStopDuringAPublishNeverAcknowledgedTakesUnderFiveSeconds() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let broker = try MosquittoBroker()
    try broker.subscribe()
    let proxy = try MQTTProxy(broker: broker, pubacks: .drop)
    let dir = try scratchDirectory("stop-timing")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = try Self.configuration(in: dir, port: proxy.port)
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
    try await waitUntil("the birth message through the proxy; log:\n\(daemon.log)", timeout: .seconds(20)) {
      proxy.published("fleet/stop-box/status") == 1
    }
    #expect(try await test.cli(["trip", "start", "--trip-id", "t1"], bus: bus.address, dir: dir).status == 0)
    let events = try sendEvents(trip: "t1", bus: bus.address, dir: dir)
    defer { if events.isRunning { kill(events.processIdentifier, SIGKILL) } }
    try await waitUntil(
      "the batch published, its PUBACK dropped; proxy:\n\(proxy.log)", timeout: .seconds(20)
    ) {
      proxy.published("fleet/DEPOT-7/trips") >= 1 && proxy.log.contains("puback dropped")
    }
    // The broker has it (its PUBACK went nowhere): the subscriber got it once.
    try await waitUntil("the subscriber got t1#0: \(keys(broker))") { keys(broker) == ["t1#0"] }

    let signalled = ContinuousClock.now
    kill(daemon.process.processIdentifier, SIGTERM)
    let exited = await waitForExit(daemon.process, seconds: 30)
    let took = ContinuousClock.now - signalled
    print("stop: SIGTERM to exit in \(took) with a publish never acknowledged (Timeout 30 s)")
    #expect(exited)
    #expect(took < .seconds(5), "the stop took \(took); log:\n\(daemon.log)")
    #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0)
    // The clean offline message reached the broker, though its PUBACK did not come back.
    #expect(proxy.published("fleet/stop-box/status") == 2, "\(proxy.log)")
    #expect(daemon.log.contains("clean offline message was not acknowledged"), "\(daemon.log)")

    // Restarted against the broker itself: the batch is sent again from the outbox, and the
    // subscriber (which dedups by key) has it once.
    _ = try Self.configuration(in: dir, port: broker.port)
    let restarted = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
    @Sendable func undelivered() async -> Int64? {
      (try? await test.cli(["status", "--json"], bus: bus.address, dir: dir))
        .flatMap { try? JSONValue.parse(Data($0.stdout.utf8))["outbox"]?["undelivered"]?.intValue }
    }
    try await waitUntil("the batch sent again; log:\n\(restarted.log)", timeout: .seconds(30)) {
      await undelivered() == 0 && keys(broker).count == 2
    }
    #expect(Set(keys(broker)) == ["t1#0"], "\(keys(broker))")
    #expect(await restarted.stop(), "\(restarted.log)")
  }

  /// The same stop with a broker that answers: the clean offline message is acknowledged, and
  /// the stop is quick (the measure beside the one above).
  @Test func aStopWithAGoodBrokerSendsTheCleanOfflineMessage() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let broker = try MosquittoBroker()
    let watcher = try MQTTWatcher(broker, topic: "fleet/stop-box/status")
    let dir = try scratchDirectory("stop-good")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = try Self.configuration(in: dir, port: broker.port)
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
    try await waitUntil("the birth message; log:\n\(daemon.log)", timeout: .seconds(20)) {
      watcher.messages.count == 1
    }
    let signalled = ContinuousClock.now
    kill(daemon.process.processIdentifier, SIGTERM)
    let exited = await waitForExit(daemon.process, seconds: 30)
    let took = ContinuousClock.now - signalled
    print("stop: SIGTERM to exit in \(took) with a broker that answers")
    #expect(exited)
    #expect(took < .seconds(5), "the stop took \(took); log:\n\(daemon.log)")
    #expect(!daemon.log.contains("not acknowledged"), "\(daemon.log)")
    let retained = try #require(try await broker.retained("fleet/stop-box/status"))
    #expect(retained["state"]?.stringValue == "offline" && retained["clean"] == .bool(true), "\(retained)")
  }

  /// The same stop during a post to an HTTP backend that takes the request and never answers
  /// (`[Upload] Timeout` the default 30 s): the daemon exits 0 within 5 s, and the batch waits in
  /// the outbox for the next start.
  @Test func aStopDuringAPostToABackendThatHangsTakesUnderFiveSeconds() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let backend = try await FakeBackend(["--script", "hang", "--hang", "120"])
    let dir = try scratchDirectory("stop-http")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = try fallbackConfiguration(in: dir, upload: "URL = \(backend.url.absoluteString)")
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
    try await waitUntil("the daemon serves its API; log:\n\(daemon.log)", timeout: .seconds(20)) {
      (try? await test.cli(["status"], bus: bus.address, dir: dir).status) == 0
    }
    #expect(try await test.cli(["trip", "start", "--trip-id", "t1"], bus: bus.address, dir: dir).status == 0)
    let events = try sendEvents(trip: "t1", bus: bus.address, dir: dir)
    defer { if events.isRunning { kill(events.processIdentifier, SIGKILL) } }
    try await waitUntil("the backend holds the post") { backend.received().contains { $0.status == "hang" } }
    let signalled = ContinuousClock.now
    kill(daemon.process.processIdentifier, SIGTERM)
    let exited = await waitForExit(daemon.process, seconds: 30)
    let took = ContinuousClock.now - signalled
    print("stop: SIGTERM to exit in \(took) with a backend that never answers (Timeout 30 s)")
    #expect(exited)
    #expect(took < .seconds(5), "the stop took \(took); log:\n\(daemon.log)")
    #expect(daemon.process.terminationReason == .exit && daemon.process.terminationStatus == 0)
  }
}
