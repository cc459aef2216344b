import BeaconCore
import Foundation
import Testing

/// What the box reads is read exactly, or refused: a key repeated in an object, a field no one
/// knows, a number rewritten before it is checked, a boolean where a setting is one.
@Suite struct ExactReadingTests {
  static let uuid = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"

  func scenarioError(_ json: String) -> String? {
    do {
      _ = try Scenario.decode(Data(json.utf8))
      return nil
    } catch { return error.description }
  }

  /// A key twice in one object is refused, naming it, wherever the object is.
  @Test(arguments: [
    (#"{"a":1,"a":2}"#, "a"), (#"{"x":{"b":[1,{"c":1,"d":2,"c":3}]}}"#, "c"),
    (#"[{"version":3},{"version":3,"version":4}]"#, "version"), (#"{"\u0061":1,"a":2}"#, "a"),
  ])
  func aRepeatedKeyIsRefusedByName(text: String, key: String) {
    do {
      let value = try JSONText.parse(Array(text.utf8))
      Issue.record("accepted \(text) as \(value)")
    } catch {
      #expect(error.duplicateKey == key)
      #expect(error.description.hasPrefix("the key \"\(key)\" appears twice in one object"), "\(error)")
    }
  }

  /// Trip events are the recorder's: a repeated key inside one passes byte for byte, but a
  /// repeated `type`, which the box reads, is refused.
  @Test func tripEventsPassRepeatedKeysButNotARepeatedType() throws {
    let text = #"{"type":"braking","g":0.41,"g":0.52,"x":{"y":1,"y":2}}"#
    let events = try TripEvent.batch(fromJSON: Array("[\(text)]".utf8))
    #expect(events.map(\.text) == [text])
    #expect(events[0].json.compactText == text)
    #expect(events[0].type == "braking")
    #expect {
      _ = try TripEvent.batch(fromJSON: Array(#"[{"type":"braking","type":"speeding"}]"#.utf8))
    } throws: { error in
      "\(error)".contains("the key \"type\" appears twice in one object")
    }
  }

  /// A whole number is read digit by digit: never through a Double that rounds it.
  @Test(arguments: [
    ("7", JSONValue.ExactInteger.integer(7)), ("7.0", .integer(7)), ("7e0", .integer(7)),
    ("70e-1", .integer(7)),
    ("7.0000000000000001", .notWhole), ("1e-3", .notWhole), ("1.5", .notWhole),
    ("9223372036854775807", .integer(Int64.max)), ("9223372036854775808", .tooLarge),
    ("-9223372036854775808", .integer(Int64.min)), ("-9223372036854775809", .tooLarge), ("1e19", .tooLarge),
    ("1e400", .tooLarge), ("0e400", .integer(0)), ("-0", .integer(0)), ("1e-400", .notWhole),
    ("0.000", .integer(0)),
  ])
  func wholeNumbersAreReadExactly(text: String, expected: JSONValue.ExactInteger) throws {
    #expect(try JSONText.parse(Array(text.utf8)).exactInteger == expected)
  }

  /// The scenario's doors: the whole document, its config, its pairings, its `pair` events.
  @Test(arguments: [
    (#"{"events":[],"events":[]}"#, "the key \"events\" appears twice in one object"),
    (#"{"config":{"exitTimeout":10,"exitTimeout":20},"events":[]}"#, "the key \"exitTimeout\" appears twice"),
    (
      #"{"pairings":[{"uuid":"\#(uuid)","major":1,"mnior":7,"deviceId":"VAN-7"}],"events":[]}"#,
      "pairings[0] has an unknown key \"mnior\" (a pairing has uuid, major, minor, deviceId, label)"
    ),
    (
      #"{"events":[{"at":1,"pair":{"uuid":"\#(uuid)","major":1,"mnior":7,"deviceId":"VAN-7"}}]}"#,
      "events[0].pair has an unknown key \"mnior\""
    ),
    (
      #"{"pairings":[{"uuid":"\#(uuid)","major":1,"major":2,"deviceId":"VAN-7"}],"events":[]}"#,
      "the key \"major\" appears twice"
    ),
    (
      #"{"events":[{"at":1,"tripStart":{"tripId":"t","tirpId":"u"}}]}"#,
      "events[0].tripStart has an unknown key \"tirpId\" (tripStart has tripId)"
    ),
    (
      #"{"events":[{"at":1,"advertisement":{"address":"C0:FF:EE:00:00:01","manufacturerData":[{"companyId":76,"hex":"00","hexx":"01"}]}}]}"#,
      "events[0].advertisement.manufacturerData[0] has an unknown key \"hexx\" (expected companyId, hex)"
    ),
    (#"{"config":{"exitTimeout":true},"events":[]}"#, "config: exitTimeout must be a number, not a boolean"),
    (
      #"{"config":{"unresolvedPolicy":false},"events":[]}"#,
      "config: unresolvedPolicy must be a string, not a boolean"
    ),
    (
      #"{"config":{"requireAuthenticated":[true]},"events":[]}"#,
      "requireAuthenticated must be true or false, not array"
    ),
    (#"{"config":{"warpFactor":true},"events":[]}"#, "config: unknown setting \"warpFactor\""),
    (#"{"config":{"activeHold":1e-400},"events":[]}"#, "activeHold \"1e-400\" is too small to tell from 0"),
    (
      #"{"config":{"exitMissProbability":1e-400},"events":[]}"#,
      "exitMissProbability \"1e-400\" is out of range"
    ),
  ])
  func theScenarioRefusesWithASentence(json: String, message: String) {
    let error = scenarioError(json)
    #expect(error?.contains(message) == true, "\(error ?? "accepted")")
  }

  /// A JSON boolean where the setting is a boolean; the string form still reads.
  @Test func aBooleanSettingTakesABoolean() throws {
    for value in ["true", "\"true\""] {
      let scenario = try Scenario.decode(
        Data(#"{"config":{"requireAuthenticated":\#(value)},"events":[]}"#.utf8))
      #expect(scenario.configuration.requireAuthenticated)
    }
    let off = try Scenario.decode(Data(#"{"config":{"requireAuthenticated":false},"events":[]}"#.utf8))
    #expect(!off.configuration.requireAuthenticated)
  }

  /// A scenario's config numbers are the numbers written, not six decimals of them.
  @Test(arguments: [("1.5e-6", 1.5e-6), ("4e-7", 4e-7), ("1e-7", 1e-7), ("0.1234567", 0.1234567)])
  func scenarioNumbersAreTakenAsWritten(literal: String, value: Double) throws {
    let scenario = try Scenario.decode(
      Data(#"{"config":{"exitMissProbability":\#(literal)},"events":[]}"#.utf8))
    #expect(scenario.configuration.presence.exitMissProbability == value)
  }

  /// A scenario's pairing with every known field still reads.
  @Test func aPairingWithItsKnownFieldsReads() throws {
    let scenario = try Scenario.decode(
      Data(
        #"{"pairings":[{"uuid":"\#(Self.uuid)","major":1,"minor":null,"deviceId":"VAN-7","label":"front"}],"events":[]}"#
          .utf8))
    #expect(scenario.pairings.map(\.deviceId) == ["VAN-7"])
    #expect(scenario.pairings.first?.minor == nil && scenario.pairings.first?.major == 1)
  }
}
