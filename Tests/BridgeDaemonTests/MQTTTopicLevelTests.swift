import BeaconCore
import BeaconTestSupport
import Testing

@testable import BridgeDaemon

/// A device ID becomes an MQTT topic level only without `/`, `+` or `#` (which `DeviceID`
/// allows): the sink refuses such a batch for good, with a sentence naming the device ID and the
/// fix, before any connection is opened.
@Suite struct MQTTTopicLevelTests {
  @Test(arguments: ["van/7", "van+7", "van#7", "/", "#"])
  func aSeparatorOrWildcardIsRefused(text: String) throws {
    let id = try DeviceID(text)
    do {
      _ = try MQTTTopicLevel(id)
      Issue.record("\(text) became a topic level")
    } catch {
      #expect(
        error.description.hasPrefix(
          "device ID \(text.quotedForMessage) cannot be in an MQTT topic: it contains "))
      #expect(
        error.description.hasSuffix("pair the beacon with a device ID without / + #, or upload over HTTP"))
    }
  }

  @Test func aDeviceIDWithoutThemIsTheTopicLevel() throws {
    let settings = try #require(
      try DaemonConfiguration.parse("[Upload]\nURL = mqtt://127.0.0.1:1\n", file: "m").mqttSettings)
    #expect(try settings.topic(for: MQTTTopicLevel("UNIT 7 ü")) == "fleet/UNIT 7 ü/trips")
  }

  /// The sink's refusal is permanent (a dead letter), and no connection is tried for it: the
  /// broker's port here has nothing listening, which a connection would report as retryable.
  @Test func theSinkRefusesTheBatchForGood() async throws {
    let settings = try #require(
      try DaemonConfiguration.parse("[Upload]\nURL = mqtt://127.0.0.1:1\n", file: "m").mqttSettings)
    let sink = MQTTSink(settings)
    defer { sink.stop() }
    let batch = TaggedTripBatch(
      batch: TripEventBatch(tripId: "t1", sequence: 0, events: [], receivedAt: .zero), deviceId: "van/7",
      resolution: .configured(deviceId: "van/7"))
    do {
      try await sink.post(batch)
      Issue.record("a batch for device van/7 was published")
    } catch let refusal as PermanentPostFailure {
      #expect(refusal.reason.hasPrefix("not sent: device ID \"van/7\" cannot be in an MQTT topic"))
    }
  }
}
