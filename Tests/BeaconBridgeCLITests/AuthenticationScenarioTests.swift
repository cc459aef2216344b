import BeaconBridgeCLI
import BeaconCore
import Foundation
import Testing

/// Pairings by key through `simulate` (docs/authentication.md): the scenarios under
/// Tests/Scenarios whose EIDs and RPAs come from the crypto oracle (Tests/Crypto/oracle.py).
@Suite struct AuthenticationScenarioTests {
  typealias Output = SimulateCommandTests.Output

  static func simulate(_ name: String) async throws -> Output {
    let output = try await SimulateCommandTests.simulate(name)
    #expect(output.status == 0, "\(name): \(output.stderr)")
    return output
  }

  /// The scenario with its `config` replaced, run from a temporary file.
  static func simulate(_ name: String, config: [String: JSONValue]) async throws -> Output {
    let path = SimulateCommandTests.scenarios.appendingPathComponent(name).path
    guard case .object(var root) = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: path))) else {
      throw ScenarioError("\(name) is not an object")
    }
    root["config"] = .object(config)
    var text = ""
    JSONWriter.write(.object(root), to: &text)
    let temporary = FileManager.default.temporaryDirectory.appendingPathComponent(
      "auth-\(UUID().uuidString).json")
    try Data(text.utf8).write(to: temporary)
    defer { try? FileManager.default.removeItem(at: temporary) }
    return try await SimulateCommandTests.simulate(path: temporary.path)
  }

  @Test func anEIDBeaconTagsTheTripAndEveryLineSaysEID() async throws {
    let output = try await Self.simulate("eid-trip.json")
    let tagged = try #require(output.of("tripTagged").first)
    #expect(tagged["deviceId"]?.stringValue == "UNIT-E1")
    #expect(tagged["authentication"]?.stringValue == "eid")
    #expect(tagged["kind"]?.stringValue == "eddystoneEID")
    #expect(tagged["label"]?.stringValue == "driver tag")
    let entered = output.of("beaconEntered")
    #expect(entered.count == 1)
    #expect(entered.allSatisfy { $0["authentication"]?.stringValue == "eid" })
    #expect(output.of("activeBeaconChanged").first?["authentication"]?.stringValue == "eid")
    #expect(output.of("batchPosted").count == 2)
    #expect(output.of("batchPosted").allSatisfy { $0["deviceId"]?.stringValue == "UNIT-E1" })
  }

  @Test func rotationAcrossTheTemporaryKeyRollOverKeepsOneBeacon() async throws {
    let output = try await Self.simulate("eid-rotation.json")
    #expect(output.of("beaconEntered").count == 1)
    #expect(output.of("beaconExited").count == 1)
    // It exits only after its last frame (200 s): the rotations and the roll-over at 36 s lost it
    // not once.
    #expect((output.of("beaconExited").first?["at"]?.doubleValue ?? 0) > 200)
    #expect(output.of("rejected").isEmpty)
    #expect(output.of("tripTagged").first?["deviceId"]?.stringValue == "UNIT-E1")
  }

  @Test func driftInsideTheToleranceResolvesAndOutsideDoesNot() async throws {
    let output = try await Self.simulate("eid-drift.json")
    let entered = output.of("beaconEntered")
    #expect(entered.map { $0["pairing"]?.intValue } == [1])
    #expect(output.of("tripTagged").first?["deviceId"]?.stringValue == "UNIT-E1")
    // With the default day of tolerance, the beacon 7200 s behind is found too.
    let wide = try await Self.simulate("eid-drift.json", config: [:])
    #expect(Set(wide.of("beaconEntered").compactMap { $0["pairing"]?.intValue }) == [1, 2])
  }

  @Test func aReplayedEIDIsRefusedAndTagsNothing() async throws {
    let output = try await Self.simulate("eid-replay.json")
    let rejected = output.of("rejected")
    // Every one of the 110 replayed frames.
    #expect(rejected.count == 110)
    #expect(rejected.allSatisfy { $0["reason"]?.stringValue == "eidReplay" })
    #expect(rejected.allSatisfy { $0["address"]?.stringValue == "C0:FF:EE:0B:AD:01" })
    #expect(output.of("beaconEntered").count == 1)
    let tagged = try #require(output.of("tripTagged").first)
    #expect(tagged["deviceId"] == .null)
    #expect(tagged["resolution"]?.stringValue == "unresolved")
  }

  @Test func aWrongKeyResolvesNothing() async throws {
    let output = try await Self.simulate("eid-wrong-key.json")
    #expect(output.of("beaconEntered").isEmpty)
    #expect(output.of("activeBeaconChanged").isEmpty)
    #expect(output.of("tripTagged").first?["resolution"]?.stringValue == "unresolved")
  }

  @Test func anRPATagsTheTripAcrossAnAddressRotation() async throws {
    let output = try await Self.simulate("rpa-trip.json")
    let entered = output.of("beaconEntered")
    // One pairing across both addresses; the stranger's private address is no beacon.
    #expect(entered.count == 1)
    #expect(entered.first?["authentication"]?.stringValue == "rpa")
    #expect(entered.first?["kind"]?.stringValue == "resolvablePrivateAddress")
    let tagged = try #require(output.of("tripTagged").first)
    #expect(tagged["deviceId"]?.stringValue == "UNIT-R1")
    #expect(tagged["authentication"]?.stringValue == "rpa")
    #expect(output.of("beaconExited").allSatisfy { ($0["at"]?.doubleValue ?? 0) > 200 })
  }

  @Test func underThePolicyAClonedPlainIdentityCannotTagATrip() async throws {
    let output = try await Self.simulate("policy-clone.json")
    #expect(
      output.of("activeBeaconChanged").compactMap { $0["deviceId"]?.stringValue }.allSatisfy {
        $0 == "UNIT-E1"
      })
    let tagged = try #require(output.of("tripTagged").first)
    #expect(tagged["deviceId"]?.stringValue == "UNIT-E1")
    #expect(tagged["authentication"]?.stringValue == "eid")
    #expect(tagged["resolution"]?.stringValue == "lateArrival")
    // The plain identity is still heard, with authentication "none".
    #expect(output.of("beaconEntered").contains { $0["authentication"]?.stringValue == "none" })

    // Without the policy the clone, stronger and there first, takes the trip: what the policy stops.
    let open = try await Self.simulate("policy-clone.json", config: [:])
    #expect(open.of("tripTagged").first?["deviceId"]?.stringValue == "UNIT-0042")
    #expect(open.of("tripTagged").first?["authentication"]?.stringValue == "none")
  }

  @Test func encryptedTLMIsOpenedIntoTheEIDBeaconsHealth() async throws {
    let output = try await Self.simulate("eid-etlm.json")
    let telemetry = output.of("telemetry")
    // Every one of the 20 frames, opened and linked to the EID beacon.
    #expect(telemetry.count == 20)
    #expect(
      telemetry.allSatisfy { $0["pairing"]?.intValue == 1 && $0["authentication"]?.stringValue == "eid" })
    #expect(telemetry.first?["batteryMv"]?.intValue == 2620)
    let health = output.of("beaconHealth")
    #expect(health.map { $0["change"]?.stringValue } == ["batteryLow"])
    #expect(health.first?["deviceId"]?.stringValue == "UNIT-E1")
    #expect(health.first?["at"]?.doubleValue == 130.5)
  }

  @Test func plainIdentitiesSayNone() async throws {
    let output = try await Self.simulate("passing-paired-beacon.json")
    #expect(output.of("tripTagged").first?["authentication"]?.stringValue == "none")
    #expect(output.of("beaconEntered").allSatisfy { $0["authentication"]?.stringValue == "none" })
  }

  @Test func aPairingByKeyIsRefusedWithoutRepeatingTheKey() async throws {
    let key = "e2c56db5dffb48d2b060d0f5a71096e"
    let scenario = """
      {"pairings": [{"eid": {"identityKey": "\(key)", "rotationExponent": 10, "beaconClock": 0},
        "deviceId": "UNIT-E1"}], "events": []}
      """
    let temporary = FileManager.default.temporaryDirectory.appendingPathComponent(
      "auth-\(UUID().uuidString).json")
    try Data(scenario.utf8).write(to: temporary)
    defer { try? FileManager.default.removeItem(at: temporary) }
    let output = try await SimulateCommandTests.simulate(path: temporary.path)
    #expect(output.status == 1)
    #expect(output.stderr.contains("pairings[0].eid.identityKey must be 32 hex digits"))
    #expect(!output.stderr.contains(key))
  }
}
