import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

/// The one number rule for settings: the configuration file and a scenario's `config` both go
/// through `BridgeConfiguration.set`, so one table covers both.
@Suite(.offThePool) struct SettingNumberTests {
  @Test(arguments: [
    ("exitTimeout", "10", 10.0), ("exitTimeout", "0.5", 0.5), ("exitTimeout", "+3", 3),
    ("exitMissProbability", "1e-07", 1e-7), ("exitMissProbability", "1E-3", 1e-3),
    ("exitMissProbability", "1e-7", 1e-7), ("exitMissProbability", "4e-7", 4e-7),
    ("exitMissProbability", "1.5e-6", 1.5e-6), ("exitMissProbability", "0.0000004", 4e-7),
    ("dwellSightings", "2.0", 2), ("dwellSightings", "2e1", 20), ("activeHold", "0e-400", 0),
    ("distanceA", "-0.5", -0.5),
    ("switchMargin", "0", 0), ("lateWindow", "86400", 86_400), ("dwellSightings", "2", 2),
    ("armaCoefficient", ".5", 0.5),
  ])
  func accepts(key: String, text: String, value: Double) throws {
    var config = BridgeConfiguration()
    try config.set(key, to: text)
    #expect(Double(try #require(config.value(of: key))) == value)
  }

  @Test(arguments: [
    (
      "exitTimeout", "0x10",
      "exitTimeout \"0x10\" is not a plain decimal number; set a number of seconds from 0.1 to 86400"
    ),
    ("exitTimeout", "1\u{0}0", "exitTimeout \"1\\00\" is not a plain decimal number"),
    (
      "exitTimeout", "1e308",
      "exitTimeout \"1e308\" is out of range; set a number of seconds from 0.1 to 86400"
    ),
    ("exitTimeout", "1e999", "exitTimeout \"1e999\" is out of range"),
    (
      "activeHold", "1e-400",
      "activeHold \"1e-400\" is too small to tell from 0; set 0 or a number of seconds"
    ),
    ("exitTimeout", String(repeating: "1", count: 65), "is longer than 64 characters"),
    ("exitTimeout", "nan", "is not a plain decimal number"),
    ("exitTimeout", "inf", "is not a plain decimal number"),
    ("exitTimeout", "-inf", "is not a plain decimal number"),
    ("exitTimeout", "10s", "is not a plain decimal number"),
    ("exitTimeout", " 10", "is not a plain decimal number"),
    ("exitTimeout", "", "is not a plain decimal number"),
    ("switchMargin", "-6", "switchMargin \"-6\" is out of range; set a number of dB from 0 to 100"),
    ("activeHold", "-1", "activeHold \"-1\" is out of range"),
    ("postRetryMax", "1e308", "postRetryMax \"1e308\" is out of range"),
    ("postRetryJitter", "2", "postRetryJitter \"2\" is out of range; set a number from 0 to 0.9"),
    ("dwellSightings", "2.5", "dwellSightings \"2.5\" is not a whole number"),
    ("dwellSightings", "2.0000000000000001", "dwellSightings \"2.0000000000000001\" is not a whole number"),
    ("maxOpenTrips", "1e19", "maxOpenTrips \"1e19\" is out of range"),
    ("dwellSightings", "0", "dwellSightings \"0\" is out of range; set a whole number from 1 to 1000"),
    ("dwellSightings", "0x10", "dwellSightings \"0x10\" is not a plain whole number"),
  ])
  func refuses(key: String, text: String, message: String) {
    var config = BridgeConfiguration()
    #expect {
      try config.set(key, to: text)
    } throws: { error in
      (error as? ConfigurationError)?.description.contains(message) == true
    }
  }

  /// A huge value is quoted cut short: the journal gets a line, not the value.
  @Test func aHugeValueIsNotEchoed() {
    var config = BridgeConfiguration()
    let huge = String(repeating: "9", count: 5_000_000)
    #expect {
      try config.set("exitTimeout", to: huge)
    } throws: { error in
      let message = (error as? ConfigurationError)?.description ?? ""
      return message.count < 200 && message.contains("…")
    }
  }

  /// Values set in code are held to the same ranges.
  @Test func problemsUseTheSameRanges() {
    var config = BridgeConfiguration()
    config.selector.switchMargin = -3
    config.presence.exitTimeout = .infinity
    let problems = config.problems()
    #expect(problems.contains("switchMargin is -3; set a number of dB from 0 to 100"))
    #expect(problems.contains { $0.hasPrefix("exitTimeout is inf") })
  }

  /// A scenario's `config` gets the same refusal as the file.
  @Test(arguments: [
    (
      #"{"config": {"exitTimeout": "0x10"}, "events": []}"#,
      "config: exitTimeout \"0x10\" is not a plain decimal number"
    ),
    (#"{"config": {"switchMargin": -6}, "events": []}"#, "config: switchMargin \"-6\" is out of range"),
    (
      #"{"config": {"lateWindow": 1e308}, "events": []}"#,
      "config: lateWindow \"1e308\" is out of range; set a number of seconds from 0 to 86400"
    ),
    (#"{"config": {"deviceId": "a\nb"}, "events": []}"#, "config: deviceId: device ID \"a\\nb\" contains"),
  ])
  func scenarioConfigSharesTheRule(json: String, message: String) {
    #expect {
      _ = try Scenario.decode(Data(json.utf8))
    } throws: { error in
      (error as? ScenarioError)?.description.contains(message) == true
    }
  }
}
