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

  /// A copy of a private address, heard after a newer address of its device or more than
  /// rpaMaxAge after it was first heard, is refused, and cannot tag a trip under
  /// requireAuthenticated.
  @Test func aReplayedRPAIsRefusedAndTagsNothing() async throws {
    let output = try await Self.simulate("rpa-replay.json")
    let rejected = output.of("rejected")
    // Every copy: 101 of UNIT-R1's first address (300-400 s), 101 of UNIT-R2's (two days on).
    #expect(rejected.count == 202)
    #expect(rejected.allSatisfy { $0["reason"]?.stringValue == "rpaReplay" })
    #expect(
      Set(rejected.compactMap { $0["address"]?.stringValue }) == ["70:81:94:0D:FB:AA", "55:AA:01:BF:5F:DA"])
    #expect(output.of("beaconEntered").allSatisfy { ($0["at"]?.doubleValue ?? .infinity) < 200 })
    let tagged = output.of("tripTagged")
    #expect(tagged.count == 2)
    #expect(tagged.allSatisfy { $0["deviceId"] == .null && $0["resolution"]?.stringValue == "unresolved" })
    // rpaMaxAge at its most, a day: UNIT-R2's copy two days on, which nothing newer supersedes,
    // is still past it.
    let lenient = try await Self.simulate(
      "rpa-replay.json", config: ["requireAuthenticated": .bool(true), "rpaMaxAge": .int(86_400)])
    #expect(lenient.of("rejected").count == 202)
  }

  /// The false-match bound through `simulate`: 167 IRK pairings (the cap) and 20,000 random
  /// addresses of the resolvable form, one advertisement each. 167 / 2^24 per address is 0.2
  /// expected matches; more than 4 would be a chance under 1e-4 were the bound right.
  @Test func randomAddressesAgainstTheIRKCapRarelyMatch() async throws {
    var state: UInt64 = 0xC0FFEE
    func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    let pairings: [JSONValue] = (0..<KeyedIdentity.maximumIRKPairings).map { n in
      .object([
        "irk": .string(String(format: "%016llx%016llx", next(), next())), "deviceId": .string("U-\(n)"),
      ])
    }
    let tried = 20_000
    let events: [JSONValue] = (0..<tried).map { i in
      let address = 0x40_0000_000000 | (next() & 0x3F_FFFF_FFFFFF)
      let text = (0..<6).map { String(format: "%02X", (address >> (40 - 8 * UInt64($0))) & 0xFF) }
        .joined(separator: ":")
      return .object([
        "at": .double(Double(i) / 100),
        "advertisement": .object(["address": .string(text), "rssi": .int(-60), "rawHex": .string("020106")]),
      ])
    }
    var text = ""
    JSONWriter.write(.object(["pairings": .array(pairings), "events": .array(events)]), to: &text)
    let file = FileManager.default.temporaryDirectory.appendingPathComponent(
      "irk-cap-\(UUID().uuidString).json")
    try Data(text.utf8).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let output = try await SimulateCommandTests.simulate(path: file.path)
    #expect(output.status == 0, "\(output.stderr)")
    let matched = output.of("beaconEntered").filter { $0["authentication"]?.stringValue == "rpa" }
    #expect(matched.count <= 4, "\(matched.count) of \(tried) random addresses matched an IRK")
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
