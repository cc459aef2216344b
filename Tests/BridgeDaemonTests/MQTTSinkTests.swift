import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

@testable import BridgeDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// The MQTT sink (libmosquitto, MQTT 5, QoS 1) against a real Mosquitto broker on loopback.
@Suite(.tags(.process), .serialized, .timeLimit(.minutes(3))) struct MQTTSinkTests {
  /// One sink per settings, as the daemon's `UploadSinks` keeps one per configuration: the same
  /// settings reuse the sink (and its connection), changed ones stop it and make a new one.
  final class Sinks: @unchecked Sendable {
    private var current: MQTTSink?
    func post(_ batch: TaggedTripBatch, _ settings: MQTTSettings) async throws {
      if current?.settings != settings {
        current?.stop()
        current = MQTTSink(settings)
      }
      try await current!.post(batch)
    }
    deinit { current?.stop() }
  }
  let sinks = Sinks()

  func batch(_ sequence: Int, trip: TripID = "mq") -> TaggedTripBatch {
    TaggedTripBatch(
      batch: TripEventBatch(
        tripId: trip, sequence: sequence, events: [Fixtures.event("braking", at: 1)], receivedAt: .zero),
      deviceId: "UNIT-7", resolution: .configured(deviceId: "UNIT-7"))
  }

  func settings(_ broker: MosquittoBroker, port: Int? = nil, tls: Bool = false) -> MQTTSettings {
    MQTTSettings(
      host: "127.0.0.1", port: port ?? broker.port, tls: tls, tlsFiles: TLSFiles(),
      clientId: "bb-test-\(UUID().uuidString.prefix(8))", username: nil, passwordFile: nil, keepAlive: 10,
      sessionExpiry: 3600, topic: "fleet/{deviceId}/trips", timeout: 5)
  }

  /// Posts until it succeeds (the bridge's retry, compressed), at most `seconds`.
  func postEventually(_ batch: TaggedTripBatch, _ settings: MQTTSettings, seconds: Int = 60) async throws {
    var last: RetryablePostFailure?
    try await waitUntil(
      "the broker took the batch; last refusal: \(last.map { "\($0)" } ?? "none")",
      timeout: .seconds(seconds),
      poll: .milliseconds(200)
    ) {
      do {
        try await sinks.post(batch, settings)
        return true
      } catch let failure as RetryablePostFailure {
        last = failure
        return false
      }
    }
  }

  func keys(_ broker: MosquittoBroker) -> [String] {
    broker.messages().compactMap { $0.payload["idempotencyKey"]?.stringValue }
  }

  @Test func aBatchIsPublishedWithItsKeyAsAUserPropertyAndInThePayload() async throws {
    let broker = try MosquittoBroker()
    try broker.subscribe()
    let settings = settings(broker)
    let start = ContinuousClock.now
    for n in 0..<3 { try await sinks.post(batch(n), settings) }
    print("MQTT: 3 batches published and acknowledged in \(ContinuousClock.now - start)")
    try await waitUntil("\(broker.log)") { keys(broker).count >= 3 }
    let messages = broker.messages()
    #expect(messages.map(\.topic) == Array(repeating: "fleet/UNIT-7/trips", count: 3))
    #expect(messages.map(\.properties) == (0..<3).map { "Idempotency-Key:mq#\($0)" })
    #expect(keys(broker) == ["mq#0", "mq#1", "mq#2"])
    #expect(messages.first?.payload["deviceId"]?.stringValue == "UNIT-7")
    #expect(messages.first?.payload["events"]?.arrayValue?.count == 1)
    // A persistent session: clean start off, the session expiry sent.
    #expect(broker.log.contains("as \(settings.clientId) (p5, c0, k10)"), "\(broker.log)")
  }

  /// The broker is down: the batch is not sent, the error says why, and it goes once the broker
  /// is back. Then kill -9 mid-stream and a restart: every key arrives.
  @Test func aBrokerThatIsDownOrRestartsHoldsTheBatches() async throws {
    let broker = try MosquittoBroker()
    try broker.subscribe()
    let settings = settings(broker)
    for n in 0..<3 { try await sinks.post(batch(n), settings) }
    // A broker killed with -9 may lose what it acknowledged but had not yet forwarded or saved
    // (its promise, not ours): kill it once the subscriber has those.
    try await waitUntil("the condition at this line") { keys(broker).count >= 3 }
    broker.kill()
    let start = ContinuousClock.now
    do {
      try await sinks.post(batch(3), settings)
      Issue.record("posted to a dead broker")
    } catch let failure as RetryablePostFailure {
      #expect(failure.reason.contains("not connected"), "\(failure.reason)")
    }
    #expect(ContinuousClock.now - start < .seconds(8))
    try broker.start()
    for n in 3..<6 { try await postEventually(batch(n), settings) }
    try await waitUntil("\(keys(broker))") { Set(keys(broker)).count >= 6 }
    #expect(Set(keys(broker)) == Set((0..<6).map { "mq#\($0)" }))
  }

  @Test func refusedCredentialsAreAClearErrorAndNothingIsLost() async throws {
    let probe = try scratchDirectory("mqtt-passwd")
    defer { try? FileManager.default.removeItem(atPath: probe) }
    let broker = try MosquittoBroker(user: ("bridge", "right-pass"))
    try broker.subscribe(arguments: ["-u", "bridge", "-P", "right-pass"])
    var settings = settings(broker)
    settings.username = "bridge"
    settings.passwordFile = try writeTokenFile("wrong-pass\n", to: probe + "/wrong")
    do {
      try await sinks.post(batch(0), settings)
      Issue.record("posted with refused credentials")
    } catch let failure as RetryablePostFailure {
      #expect(failure.reason.contains("refused the connection"), "\(failure.reason)")
      #expect(
        failure.reason.contains("Bad user name or password") || failure.reason.contains("Not authorized"))
    }
    #expect(broker.messages().isEmpty)
    settings.passwordFile = try writeTokenFile("right-pass\n", to: probe + "/right")
    try await postEventually(batch(0), settings)
    try await waitUntil("\(keys(broker))") { keys(broker) == ["mq#0"] }
  }

  @Test func mutualTLSWithATestCA() async throws {
    let pki = try HTTPFaultTests.TestPKI()
    defer { try? FileManager.default.removeItem(atPath: pki.dir) }
    let (broker, tlsPort) = try MosquittoBroker.withTLS(pki, extra: "require_certificate true")
    try broker.subscribe()
    var settings = settings(broker, port: tlsPort, tls: true)
    settings.tlsFiles = TLSFiles(caFile: pki.ca, certFile: pki.clientCert, keyFile: pki.clientKey)
    try await postEventually(batch(0), settings, seconds: 20)
    try await waitUntil("\(keys(broker))") { keys(broker) == ["mq#0"] }
    // Without the client certificate the broker refuses the handshake: not connected, nothing sent.
    settings.tlsFiles = TLSFiles(caFile: pki.ca)
    settings.clientId += "-nocert"
    await #expect(throws: RetryablePostFailure.self) {
      try await sinks.post(batch(1), settings)
    }
    #expect(keys(broker) == ["mq#0"])
  }

  /// Each sink owns its client: two sinks with their own client IDs are connected at once and
  /// both deliver, and stopping one leaves the other publishing.
  @Test func eachSinkOwnsItsClient() async throws {
    let broker = try MosquittoBroker()
    try broker.subscribe()
    var first = settings(broker)
    first.clientId += "-a"
    var second = settings(broker)
    second.clientId += "-b"
    let a = MQTTSink(first)
    let b = MQTTSink(second)
    try await a.post(batch(0, trip: "a"))
    try await b.post(batch(0, trip: "b"))
    a.stop()
    try await b.post(batch(1, trip: "b"))
    b.stop()
    try await waitUntil("both sinks' batches at the broker; it has \(keys(broker))") {
      Set(keys(broker)) == ["a#0", "b#0", "b#1"]
    }
    #expect(
      broker.log.contains("as \(first.clientId) (p5") && broker.log.contains("as \(second.clientId) (p5"))
  }

  /// `UploadSinks`, as the daemon uses it on SIGHUP: an unchanged configuration keeps the sink,
  /// a changed `[Upload]` or `[MQTT]` setting builds a new one, an http URL the HTTP sink, and no
  /// URL none (the batch waits).
  @Test func theConfigurationBuildsTheSinkAndAReloadSwapsIt() async throws {
    let sinks = UploadSinks()
    defer { sinks.stop() }
    var config = try DaemonConfiguration.parse("[Upload]\nURL = mqtt://127.0.0.1:1\n", file: "a.conf")
    let first = try #require(sinks.sink(for: config) as? MQTTSink)
    #expect(sinks.sink(for: config) as? MQTTSink === first)
    config.mqtt.topic = "fleet/{deviceId}/other"
    let second = try #require(sinks.sink(for: config) as? MQTTSink)
    #expect(second !== first && second.settings.topic == "fleet/{deviceId}/other")
    config.uploadURL = "https://backend.example/trips"
    #expect(sinks.sink(for: config) is HTTPUploader)
    config.uploadURL = nil
    #expect(sinks.sink(for: config) == nil)
    await #expect(throws: RetryablePostFailure.self) { try await sinks.post(batch(0), config: config) }
  }

  /// The MQTT message is the HTTP body with the key in it: one payload type for both sinks.
  @Test func thePayloadIsTheSameObjectForBothSinks() throws {
    let payload = try UploadPayload(batch(2))
    let http = try JSONValue.parse(Data(payload.httpBody))
    guard case .object(var mqtt) = try JSONValue.parse(Data(payload.mqttBody)) else {
      Issue.record("not an object")
      return
    }
    #expect(mqtt.removeValue(forKey: "idempotencyKey") == .string("mq#2"))
    #expect(JSONValue.object(mqtt) == http)
    #expect(payload.idempotencyKey == "mq#2")
  }

  @Test func theURLPicksTheSinkAndTheSectionParses() throws {
    let config = try DaemonConfiguration.parse(
      """
      [Upload]
      URL = mqtts://broker.example:8884
      Timeout = 7
      CAFile = /etc/beaconbridge/ca.pem
      [MQTT]
      Topic = fleet/{deviceId}/batches
      ClientId = van-7
      Username = bridge
      PasswordFile = /etc/beaconbridge/mqtt-password
      KeepAlive = 30
      SessionExpiry = 600
      """, file: "m.conf")
    let mqtt = try #require(config.mqttSettings)
    #expect(mqtt.host == "broker.example" && mqtt.port == 8884 && mqtt.tls)
    #expect(try mqtt.topic(for: MQTTTopicLevel("UNIT-1")) == "fleet/UNIT-1/batches")
    #expect(mqtt.clientId == "van-7" && mqtt.username == "bridge" && mqtt.keepAlive == 30)
    #expect(
      mqtt.sessionExpiry == 600 && mqtt.timeout == 7 && mqtt.tlsFiles.caFile == "/etc/beaconbridge/ca.pem")
    #expect(MQTTSettings.endpoint("mqtt://10.0.0.1")! == ("10.0.0.1", 1883, false))
    #expect(try DaemonConfiguration.parse("[Upload]\nURL = https://x/y\n", file: "h").mqttSettings == nil)
    for bad in ["[MQTT]\nTopic = fleet/+/trips\n", "[MQTT]\nKeepAlive = 1\n", "[Upload]\nURL = mqtt://\n"] {
      #expect(throws: KeyFileError.self) { try DaemonConfiguration.parse(bad, file: "b") }
    }
  }

  /// Each publish ends in one `PublishOutcome`, resumed by an event, never found by a poll: the
  /// PUBACK (acknowledged), its absence past the timeout (timedOut), the caller's cancellation
  /// or the client's stop (abandoned, at once). The broker is a real Mosquitto; behind
  /// Tests/Support/mqtt_proxy.py it takes every message and never acknowledges one.
  @Test func publishOutcomesComeFromEvents() async throws {
    let broker = try MosquittoBroker()
    let good = try MQTTClient(settings(broker))
    defer { good.stop() }
    #expect(await good.publish(topic: "t/a", payload: Array("1".utf8), key: "k1") == .acknowledged)

    let proxy = try MQTTProxy(broker: broker, pubacks: .drop)
    let mute = try MQTTClient(settings(broker, port: proxy.port))
    var started = ContinuousClock.now
    #expect(await mute.publish(topic: "t/b", payload: Array("2".utf8), key: "k2", timeout: 0.3) == .timedOut)
    let timedOut = ContinuousClock.now - started
    #expect(timedOut >= .milliseconds(300) && timedOut < .seconds(5), "\(timedOut)")

    let cancelled = Task { await mute.publish(topic: "t/c", payload: Array("3".utf8), key: "k3") }
    try await waitUntil("the publish reached the broker; proxy: \(proxy.log)") { proxy.published("t/c") == 1 }
    started = ContinuousClock.now
    cancelled.cancel()
    #expect(await cancelled.value == .abandoned)
    #expect(ContinuousClock.now - started < .seconds(2))

    let stopped = Task { await mute.publish(topic: "t/d", payload: Array("4".utf8), key: "k4") }
    try await waitUntil("the publish reached the broker; proxy: \(proxy.log)") { proxy.published("t/d") == 1 }
    started = ContinuousClock.now
    await mute.stopAndWait(seconds: 2)
    #expect(await stopped.value == .abandoned)
    let stopping = ContinuousClock.now - started
    print("MQTT client: a stop with a publish never acknowledged took \(stopping)")
    #expect(stopping < .seconds(2), "\(stopping)")
    // The broker saw a DISCONNECT, not a dropped socket.
    try await waitUntil("the broker logs the disconnect: \(broker.log.suffix(600))") {
      broker.log.contains("disconnected.") || broker.log.contains("closed its connection")
    }
  }
}
