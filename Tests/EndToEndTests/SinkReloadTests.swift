import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The upload sink is built from the configuration and swapped on SIGHUP (`UploadSinks`): after
/// a reload that names another broker, the old sink's connection closes at once and the next
/// batches go to the new broker only. Real daemon, two real Mosquitto brokers.
@Suite(.tags(.process), .timeLimit(.minutes(5)))
struct SinkReloadTests {
  let test = DaemonEndToEndTests()

  func keys(_ broker: MosquittoBroker) -> [String] {
    broker.messages().compactMap { $0.payload["idempotencyKey"]?.stringValue }
  }

  /// Whether the broker saw client `id` go (Mosquitto logs "Client ID disconnected." or
  /// "Client ID closed its connection.").
  func left(_ broker: MosquittoBroker, _ id: String) -> Bool {
    broker.log.contains("Client \(id) disconnected")
      || broker.log.contains("Client \(id) closed its connection")
  }

  @Test func aReloadSwapsTheSinkAndClosesTheOldConnection() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let bus = fixture.bus.address
    let dir = try scratchDirectory("sink-reload")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let first = try MosquittoBroker()
    try first.subscribe()
    let second = try MosquittoBroker()
    try second.subscribe()
    let (daemon, config) = try await DeliveryDoctorTests().startDaemonWithTrip(
      upload: "URL = mqtt://127.0.0.1:\(first.port)\n[MQTT]\nClientId = reload-first", dir: dir, bus: bus)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    try await waitUntil("\(first.log)", timeout: .seconds(30)) { keys(first) == ["t1#0", "t1#1"] }
    #expect(!left(first, "reload-first"), "\(first.log)")

    _ = try fallbackConfiguration(
      in: dir,
      upload: """
        postRetryInitial = 0.2
        postRetryMax = 1
        Timeout = 3
        URL = mqtt://127.0.0.1:\(second.port)
        [MQTT]
        ClientId = reload-second
        """)
    #expect(config == dir + "/beaconbridge.conf")
    let log: @Sendable () -> String = {
      (try? String(contentsOfFile: dir + "/daemon.log", encoding: .utf8)) ?? ""
    }
    kill(daemon.processIdentifier, SIGHUP)
    try await waitUntil("\(log())", timeout: .seconds(20)) { log().contains("configuration reloaded") }
    // The old sink stopped at the reload, before any new post: its client left the first broker.
    try await waitUntil("\(first.log)", timeout: .seconds(20)) { left(first, "reload-first") }

    #expect(try await test.cli(["trip", "end", "--trip-id", "t1"], bus: bus, dir: dir).status == 0)
    #expect(try await test.cli(["trip", "start", "--trip-id", "t2"], bus: bus, dir: dir).status == 0)
    let sent = try await test.cli(
      ["trip", "events", "--trip-id", "t2", "-"], bus: bus, dir: dir, stdin: #"[{"type":"c"}]"#)
    #expect(sent.status == 0, "\(sent.stderr)")
    try await waitUntil("\(second.log)\n\(log())", timeout: .seconds(30)) { keys(second) == ["t2#0"] }
    #expect(keys(first) == ["t1#0", "t1#1"])
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon), "daemon did not exit in time")
  }
}
