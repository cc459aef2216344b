import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

@testable import BridgeDaemon

/// `[Fleet]`: the box ID and its topics, and the broker the fleet link speaks to.
@Suite struct FleetConfigurationTests {
  func parse(_ text: String) throws(KeyFileError) -> DaemonConfiguration {
    try DaemonConfiguration.parse(text, file: "f.conf")
  }

  @Test func offUnlessAKeyIsSet() throws {
    let config = try parse("[Upload]\nURL = mqtt://127.0.0.1:1883\n")
    #expect(!config.fleet.enabled)
    #expect(config.fleetSettings == nil)
  }

  @Test func theUploadBrokerWithItsCredentialsAndAClientIdOfItsOwn() throws {
    let config = try parse(
      """
      [Upload]
      URL = mqtts://broker.example:8884
      CAFile = /etc/ca.pem
      [MQTT]
      ClientId = van-7
      Username = box
      PasswordFile = /etc/pw
      KeepAlive = 5
      [Fleet]
      BoxId = van-7
      """)
    let fleet = try #require(config.fleetSettings)
    #expect(fleet.host == "broker.example" && fleet.port == 8884 && fleet.tls)
    #expect(fleet.tlsFiles.caFile == "/etc/ca.pem")
    #expect(fleet.username == "box" && fleet.passwordFile == "/etc/pw" && fleet.keepAlive == 5)
    #expect(fleet.clientId == "van-7-fleet")
    let topics = FleetTopics(config.fleet, boxId: "van-7")
    #expect(topics.status == "fleet/van-7/status")
    #expect(topics.desired == "fleet/van-7/config/desired")
    #expect(topics.reported == "fleet/van-7/config/reported")
    #expect(topics.beacons == "fleet/van-7/beacons")
    #expect(config.fleet.reportInterval == 900)
  }

  @Test func itsOwnURLAndTopics() throws {
    let config = try parse(
      """
      [Upload]
      URL = https://api.example/trips
      [Fleet]
      URL = mqtt://fleet.example
      StatusTopic = boxes/{boxId}/alive
      ReportInterval = 60
      """)
    let fleet = try #require(config.fleetSettings)
    #expect(fleet.host == "fleet.example" && fleet.port == 1883 && !fleet.tls)
    #expect(FleetTopics(config.fleet, boxId: "b1").status == "boxes/b1/alive")
    #expect(config.fleet.reportInterval == 60)
  }

  @Test(arguments: [
    ("BoxId = a/b", 2, "cannot be one MQTT topic level"),
    ("BoxId = a+b", 2, "cannot be one MQTT topic level"),
    ("BoxId = #", 2, "cannot be one MQTT topic level"),
    ("BoxId = $SYS", 2, "cannot be one MQTT topic level"),
    ("BoxId = a b", 2, "cannot be one MQTT topic level"),
    ("BoxId = é1", 2, "cannot be one MQTT topic level"),
    ("BoxId =", 2, "BoxId is empty"),
    ("BoxId = " + String(repeating: "a", count: 65), 2, "over 64"),
    ("DesiredTopic = fleet/+/desired", 2, "without + or #"),
    ("URL = https://x", 2, "mqtt://host[:port]"),
    ("ReportInterval = 5", 2, "ReportInterval"),
    ("Colour = red", 2, "unknown key Colour in [Fleet]"),
  ])
  func aBadValueIsAnErrorAtItsLine(line: String, number: Int, message: String) throws {
    let error = #expect(throws: KeyFileError.self) {
      try parse("[Fleet]\n\(line)\n[Upload]\nURL = mqtt://127.0.0.1\n")
    }
    #expect(error?.line == number, "\(String(describing: error))")
    #expect(error?.message.contains(message) == true, "\(String(describing: error))")
  }

  @Test func aFleetWithoutABrokerIsAnErrorAtTheSection() throws {
    let error = #expect(throws: KeyFileError.self) {
      try parse("[Upload]\nURL = https://api.example\n\n[Fleet]\nBoxId = b1\n")
    }
    #expect(error?.line == 5)
    #expect(error?.message.contains("[Fleet] needs a broker") == true)
  }

  @Test func theBoxIdDefaultsToTheMachineId() throws {
    let dir = try scratchDirectory("machine-id")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try "0123456789abcdef0123456789abcdef\n".write(
      toFile: dir + "/machine-id", atomically: true, encoding: .utf8)
    try "not hex\n".write(toFile: dir + "/bad", atomically: true, encoding: .utf8)
    var fleet = FleetOptions()
    #expect(fleet.resolvedBoxId(machineIdPath: dir + "/machine-id") == "0123456789ab")
    #expect(fleet.resolvedBoxId(machineIdPath: dir + "/bad") == nil)
    #expect(fleet.resolvedBoxId(machineIdPath: dir + "/missing") == nil)
    fleet.boxId = "van-7"
    #expect(fleet.resolvedBoxId(machineIdPath: dir + "/machine-id") == "van-7")
  }

  /// The fleet's topics are checked against each other: two that name one topic (equal, or
  /// matched by one name through `{boxId}` or `{deviceId}`) are refused at the later key's line,
  /// naming both keys and the fix.
  @Test(arguments: [
    (
      "[Fleet]\nURL = mqtt://b\nDesiredTopic = x/{boxId}\nReportedTopic = x/{boxId}\n", 4,
      "[Fleet] DesiredTopic \"x/{boxId}\" and [Fleet] ReportedTopic \"x/{boxId}\" are the same topic"
    ),
    (
      "[Fleet]\nURL = mqtt://b\nStatusTopic = fleet/{boxId}/config/desired\n", 3,
      "[Fleet] StatusTopic \"fleet/{boxId}/config/desired\" and [Fleet] DesiredTopic"
    ),
    (
      "[Fleet]\nURL = mqtt://b\nBeaconsTopic = a/{boxId}-x\nReportedTopic = a/van-{boxId}\n", 4,
      "[Fleet] ReportedTopic \"a/van-{boxId}\" and [Fleet] BeaconsTopic \"a/{boxId}-x\" overlap (one topic name matches both)"
    ),
    (
      "[Upload]\nURL = mqtt://b\n[MQTT]\nTopic = fleet/{deviceId}/status\n[Fleet]\nBoxId = v\n", 4,
      "[Fleet] StatusTopic \"fleet/{boxId}/status\" and [MQTT] Topic \"fleet/{deviceId}/status\" overlap"
    ),
  ])
  func overlappingTopicsAreRefusedAtTheirLine(text: String, line: Int, message: String) {
    var refusal: KeyFileError?
    do { _ = try DaemonConfiguration.parse(text, file: "fleet.conf") } catch { refusal = error }
    #expect(refusal?.line == line, "\(String(describing: refusal))")
    #expect(refusal?.message.hasPrefix(message) == true, "\(refusal?.message ?? "accepted")")
    #expect(refusal?.message.hasSuffix("give each a topic of its own") == true)
  }

  @Test func topicsThatCannotMeetAreTaken() throws {
    // Another level count, another word, or the trips on another broker.
    _ = try DaemonConfiguration.parse(
      "[Fleet]\nURL = mqtt://b\nDesiredTopic = x/{boxId}/in\nReportedTopic = x/{boxId}/out\nStatusTopic = x/{boxId}\n",
      file: "f.conf")
    _ = try DaemonConfiguration.parse(
      "[Upload]\nURL = mqtt://upload\n[MQTT]\nTopic = fleet/{deviceId}/status\n[Fleet]\nURL = mqtt://fleet\n",
      file: "f.conf")
    #expect(FleetTopicCheck.overlaps("a/{boxId}", "a/b"))
    #expect(FleetTopicCheck.overlaps("a/x{boxId}y", "a/{deviceId}y"))
    #expect(!FleetTopicCheck.overlaps("a/x{boxId}", "a/y{deviceId}"))
    #expect(!FleetTopicCheck.overlaps("a/{boxId}", "a/"))
    #expect(!FleetTopicCheck.overlaps("a/{boxId}", "a/b/c"))
  }
}
