import BeaconBridgeCLI
import BeaconCore
import Foundation
import Testing

/// `simulate` as a user runs it: the scenario files under Tests/Scenarios, through the CLI.
@Suite struct SimulateCommandTests {
  static let scenarios = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .appendingPathComponent("Scenarios")

  struct Output {
    var status: Int32
    var lines: [JSONValue]
    var text: String
    var stderr: String

    func of(_ type: String) -> [JSONValue] { lines.filter { $0["type"]?.stringValue == type } }
  }

  static func simulate(_ name: String) async throws -> Output {
    try await simulate(path: scenarios.appendingPathComponent(name).path)
  }

  static func simulate(path: String) async throws -> Output {
    let console = CapturingConsole()
    let status = await CLI.main(["simulate", path], console: console)
    let lines = try console.stdout.split(separator: "\n").map { try JSONValue.parse(Data($0.utf8)) }
    return Output(status: status, lines: lines, text: console.stdout, stderr: console.stderr)
  }

  @Test func everyLineCarriesAtAndType() async throws {
    for name in try FileManager.default.contentsOfDirectory(atPath: Self.scenarios.path)
    where name.hasSuffix(".json") {
      let output = try await Self.simulate(name)
      #expect(output.status == 0, "\(name): \(output.stderr)")
      #expect(!output.lines.isEmpty, "\(name) printed nothing")
      for line in output.lines {
        #expect(line["at"]?.doubleValue != nil, "\(name): \(line.compactText)")
        #expect(line["type"]?.stringValue != nil, "\(name): \(line.compactText)")
      }
      let times = output.lines.compactMap { $0["at"]?.doubleValue }
      #expect(times == times.sorted(), "\(name): time goes backwards")
    }
  }

  @Test func sameFileSameOutput() async throws {
    let first = try await Self.simulate("passing-paired-beacon.json")
    let second = try await Self.simulate("passing-paired-beacon.json")
    #expect(first.text == second.text)
    #expect(first.text.count > 1000)
  }

  @Test func lossyBeaconNeverFlapsAndStaysActive() async throws {
    let output = try await Self.simulate("lossy-beacon.json")
    #expect(output.of("beaconEntered").count == 1)
    let exits = output.of("beaconExited")
    #expect(exits.count == 1)
    // It exits only after the last advertisement (≤ 600 s).
    #expect((exits.first?["at"]?.doubleValue ?? 0) > 600)
    let active = output.of("activeBeaconChanged").map { $0["deviceId"]?.stringValue }
    #expect(active == ["UNIT-0042", nil])
    #expect(output.of("batchPosted").count == 3)
  }

  @Test func passingPairedBeaconDoesNotTagTheTrip() async throws {
    let output = try await Self.simulate("passing-paired-beacon.json")
    let tagged = try #require(output.of("tripTagged").first)
    #expect(tagged["deviceId"]?.stringValue == "UNIT-0042")
    #expect(tagged["minor"]?.intValue == 7)
    #expect(tagged["rssi"]?.intValue != nil)
    #expect(output.of("activeBeaconChanged").map { $0["deviceId"]?.stringValue } == ["UNIT-0042"])
    // The other van's beacon was seen, and left.
    #expect(output.of("beaconEntered").contains { $0["minor"]?.intValue == 9 })
    #expect(output.of("batchPosted").allSatisfy { $0["deviceId"]?.stringValue == "UNIT-0042" })
  }

  @Test func lateBeaconTagsEarlierBatches() async throws {
    let output = try await Self.simulate("late-beacon.json")
    #expect(output.of("batchHeld").count == 2)
    let posted = output.of("batchPosted")
    #expect(posted.map { $0["sequence"]?.intValue } == [0, 1, 2])
    #expect(posted.allSatisfy { $0["deviceId"]?.stringValue == "UNIT-0042" })
    let tagged = try #require(output.of("tripTagged").first)
    #expect(tagged["resolution"]?.stringValue == "lateArrival")
    let tagTime = try #require(tagged["at"]?.doubleValue)
    #expect(tagTime >= 30 && tagTime < 35)
    #expect(output.of("tripEnded").first?["resolved"] == .bool(true))
  }

  /// `sending = postTrip` in the scenario's config: the trip is tagged at its start, but its
  /// batches are posted, in order, only after `tripEnd`.
  @Test func postTripPostsAfterTheTripEnds() async throws {
    let output = try await Self.simulate("post-trip.json")
    #expect(output.status == 0, "\(output.stderr)")
    let tagged = try #require(output.of("tripTagged").first?["at"]?.doubleValue)
    #expect(tagged < 30)
    let ended = try #require(output.of("tripEnded").first?["at"]?.doubleValue)
    let posted = output.of("batchPosted")
    #expect(posted.map { $0["sequence"]?.intValue } == [0, 1, 2])
    #expect(posted.allSatisfy { ($0["at"]?.doubleValue ?? 0) >= ended }, "\(output.text)")
    // The same scenario in realtime posts each batch when it comes.
    let text = try String(
      contentsOfFile: Self.scenarios.appendingPathComponent("post-trip.json").path, encoding: .utf8)
    let realtime = text.replacingOccurrences(of: "\"postTrip\"", with: "\"realtime\"")
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("rt-\(UUID().uuidString).json")
      .path
    try Data(realtime.utf8).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let live = try await Self.simulate(path: path).of("batchPosted").compactMap { $0["at"]?.doubleValue }
    #expect(live.count == 3 && live.allSatisfy { $0 < ended }, "\(live)")
  }

  @Test func noBeaconLeavesTheTripHeld() async throws {
    let output = try await Self.simulate("no-beacon.json")
    #expect(output.of("batchPosted").isEmpty)
    #expect(output.of("batchHeld").map { $0["events"]?.intValue } == [1, 1, 1])
    let tagged = try #require(output.of("tripTagged").first)
    #expect(tagged["deviceId"] == .null)
    let ended = try #require(output.of("tripEnded").first)
    #expect(ended["resolved"] == .bool(false))
    #expect(ended["deviceId"] == .null)
  }

  @Test func strongUnpairedBeaconIsNeverActive() async throws {
    let output = try await Self.simulate("unpaired-strong.json")
    #expect(output.of("beaconEntered").count == 2)
    #expect(output.of("activeBeaconChanged").map { $0["minor"]?.intValue } == [7])
    #expect(output.of("tripTagged").first?["deviceId"]?.stringValue == "UNIT-0042")
  }

  @Test func malformedFramesAreRejectedLines() async throws {
    let output = try await Self.simulate("malformed-frames.json")
    #expect(output.status == 0)
    #expect(
      output.of("rejected").map { $0["reason"]?.stringValue } == [
        "malformedTail", "malformedTail", "iBeaconShortBody",
      ])
    // The Eddystone-UID before the damaged iBeacon is kept (BlueZ eir_parse) and the damage is
    // reported; the EID frame is ignored, not rejected.
    #expect(output.of("beaconEntered").map { $0["kind"]?.stringValue } == ["iBeacon", "eddystoneUID"])
    #expect(output.of("activeBeaconChanged").count == 1)
  }

  // MARK: Beacon health

  /// TLM and URL interleaved with a paired iBeacon from one address are joined to it by address;
  /// the frames' own fields are on every line.
  @Test func interleavedTelemetryIsJoinedByAddress() async throws {
    let output = try await Self.simulate("tlm-interleaved.json")
    #expect(output.status == 0)
    #expect(output.of("rejected").isEmpty)
    let van7 = output.of("telemetry").filter { $0["minor"]?.intValue == 7 }
    #expect(van7.count == 6)
    #expect(van7.allSatisfy { $0["kind"]?.stringValue == "iBeacon" && $0["batteryMv"]?.intValue == 3000 })
    #expect(van7.first?["temperatureC"] == .double(21.5))
    #expect(van7.first?["uptimeSeconds"] == .double(3600.5))
    #expect(van7.first?["advertisingCount"]?.intValue == 36005)
    // The UID beacon's TLM came before its UID: reported unlinked, then linked when the UID came.
    let uid = output.of("telemetry").filter { $0["address"]?.stringValue == "C0:FF:EE:00:00:55" }
    #expect(uid.map { $0["kind"] } == [.null, .string("eddystoneUID")])
    #expect(uid.last?["instance"]?.stringValue == "000000000055")
    let url = try #require(output.of("eddystoneURL").first)
    #expect(url["url"]?.stringValue == "https://example.com")
    #expect(url["txPower"]?.intValue == -21)
    #expect(url["minor"]?.intValue == 7)
    let entered = output.of("beaconEntered")
    #expect(entered.first { $0["kind"]?.stringValue == "iBeacon" }?["measuredPower"]?.intValue == -59)
    #expect(entered.first { $0["kind"]?.stringValue == "eddystoneUID" }?["txPower"]?.intValue == -29)
    #expect(output.of("beaconHealth").isEmpty)
  }

  @Test func rebootAndSilenceAreHealthChanges() async throws {
    let output = try await Self.simulate("tlm-reboot.json")
    let changes = output.of("beaconHealth")
    #expect(changes.map { $0["change"]?.stringValue } == ["rebooted", "silent"])
    #expect(changes.allSatisfy { $0["deviceId"]?.stringValue == "UNIT-0042" })
    #expect(changes.first?["at"] == .double(60.5))
    #expect(changes.first?["uptimeSeconds"] == .double(0.5))
    #expect(changes.first?["reboots"]?.intValue == 1)
  }

  @Test func batteryCrossingTheThresholdOnce() async throws {
    let output = try await Self.simulate("tlm-low-battery.json")
    let changes = output.of("beaconHealth")
    #expect(changes.map { $0["change"]?.stringValue } == ["batteryLow"])
    #expect(changes.first?["at"] == .double(130.5))
    #expect(changes.first?["batteryMv"]?.intValue == 2490)
    #expect(changes.first?["batteryLow"] == .bool(true))
  }

  /// plain-clone.json: a copy of van 7 interleaved with it from another address is noticed once
  /// and cleared once; van 9, rotating its address once, is no clone.
  @Test func aClonedPlainIdentityIsNoticedAndClears() async throws {
    let output = try await Self.simulate("plain-clone.json")
    #expect(output.status == 0, "\(output.stderr)")
    let changes = output.of("beaconHealth")
    #expect(changes.map { $0["change"]?.stringValue } == ["possibleClone", "cloneCleared"])
    #expect(changes.allSatisfy { $0["deviceId"]?.stringValue == "UNIT-0042" })
    #expect(changes.map { $0["at"]?.doubleValue } == [51.5, 391])
    #expect(changes.first?["possibleClone"] == .bool(true))
    #expect(changes.first?["authentication"]?.stringValue == "none")
    #expect(
      changes.first?["cloneAddresses"]
        == .array([.string("C0:FF:EE:00:00:07"), .string("DE:AD:BE:EF:00:07")]))
    #expect(changes.last?["possibleClone"] == .bool(false))
    #expect(changes.last?["cloneAddresses"] == .array([]))
  }

  @Test(arguments: [
    ("{", "not valid JSON"),
    ("[]", "the top level must be an object"),
    ("{\"events\": 3}", "events must be an array"),
    ("{}", "has no \"events\" array"),
    ("{\"events\": [{\"tripStart\": {\"tripId\": \"t\"}}]}", "events[0] has no \"at\" time"),
    ("{\"events\": [{\"at\": -1, \"tripStart\": {\"tripId\": \"t\"}}]}", "events[0].at must be a number"),
    ("{\"events\": [{\"at\": 1, \"fly\": {}}]}", "unknown action \"fly\""),
    ("{\"events\": [{\"at\": 1, \"advertisement\": {\"address\": \"nope\"}}]}", "is not a Bluetooth address"),
    (
      "{\"events\": [{\"at\": 1, \"advertisement\": {\"address\": \"C0:FF:EE:00:00:01\", \"rawHex\": \"zz\"}}]}",
      "rawHex must be a string of hex digits"
    ),
    (
      "{\"events\": [{\"at\": 1, \"advertisement\": {\"address\": \"C0:FF:EE:00:00:01\", \"rssi\": \"loud\"}}]}",
      "rssi must be a whole number"
    ),
    (
      "{\"config\": {\"exitTimeout\": \"soon\"}, \"events\": []}",
      "exitTimeout \"soon\" is not a plain decimal number; set a number of seconds"
    ),
    ("{\"config\": {\"warpFactor\": 9}, \"events\": []}", "unknown setting \"warpFactor\""),
    ("{\"config\": {\"unresolvedPolicy\": \"fallback\"}, \"events\": []}", "needs a fallbackDeviceId"),
    (
      "{\"pairings\": [{\"uuid\": \"x\", \"deviceId\": \"A\"}], \"events\": []}",
      "pairings[0]: UUID \"x\" is not a UUID"
    ),
    (
      "{\"events\": [{\"at\": 1, \"tripEvents\": {\"tripId\": \"t\", \"events\": [{\"at\": 2}]}}]}",
      "has no \"type\""
    ),
    ("{\"events\": [], \"extra\": 1}", "unknown top-level key \"extra\""),
  ])
  func malformedScenarioGetsOneClearError(json: String, message: String) async throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).json")
      .path
    try Data(json.utf8).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let output = try await Self.simulate(path: path)
    #expect(output.status == 1)
    #expect(output.text.isEmpty)
    #expect(output.stderr.contains(message), "stderr was: \(output.stderr)")
    #expect(output.stderr.split(separator: "\n").count == 1)
  }

  /// An event whose identifier breaks its rule is a `rejected` line with the reason, at its time;
  /// the rest of the scenario plays on.
  @Test(arguments: [
    (
      #"{"at": 1, "tripStart": {"tripId": "t\r\nforged"}}"#,
      #"events[0].tripStart.tripId: trip ID "t\r\nforged" contains the control or invisible character U+000D"#
    ),
    (#"{"at": 1, "tripStart": {"tripId": ""}}"#, #"events[0].tripStart.tripId: trip ID "" is empty"#),
    (
      #"{"at": 1, "tripEnd": {"tripId": "a b"}}"#, #"events[0].tripEnd.tripId: trip ID "a b" contains U+0020"#
    ),
    (
      #"{"at": 1, "tripEvents": {"tripId": "t\u0000", "events": []}}"#,
      #"events[0].tripEvents.tripId: trip ID "t\0" contains"#
    ),
    (
      #"{"at": 1, "tripAssign": {"tripId": "t1", "deviceId": "X\u2028Y"}}"#,
      #"events[0].tripAssign.deviceId: device ID "X\u{2028}Y" contains the control or invisible character U+2028"#
    ),
    (
      #"{"at": 1, "unpair": {"deviceId": " X"}}"#,
      #"events[0].unpair.deviceId: device ID " X" starts or ends with a space"#
    ),
    (
      #"{"at": 1, "pair": {"uuid": "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "major": 70000, "deviceId": "X"}}"#,
      #"events[0].pair: major "70000" must be a whole number from 0 to 65535"#
    ),
    (
      #"{"at": 1, "pair": {"uuid": "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "major": 1, "minor": -7, "deviceId": "X"}}"#,
      #"events[0].pair: minor "-7" must be a whole number from 0 to 65535"#
    ),
  ])
  func badIdentifiersAreRejectedLines(event: String, detail: String) async throws {
    let json = """
      {"config": {"unresolvedPolicy": "fallback", "fallbackDeviceId": "DEPOT"}, "events": [\(event),
        {"at": 2, "tripStart": {"tripId": "ok-1"}}, {"at": 3, "tripEnd": {"tripId": "ok-1"}}]}
      """
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("ids-\(UUID().uuidString).json")
      .path
    try Data(json.utf8).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let output = try await Self.simulate(path: path)
    #expect(output.status == 0, "\(output.stderr)")
    let rejected = output.of("rejected")
    #expect(rejected.count == 1, "\(output.text)")
    #expect(rejected.first?["at"]?.doubleValue == 1)
    #expect(rejected.first?["reason"]?.stringValue == "invalidIdentifier")
    #expect(rejected.first?["detail"]?.stringValue?.hasPrefix(detail) == true, "\(output.text)")
    // Nothing forged: every output line is one JSON object, and the good trip still ran.
    #expect(output.text.split(separator: "\n").count == output.lines.count)
    #expect(output.of("tripStarted").compactMap { $0["tripId"]?.stringValue } == ["ok-1"])
  }

  @Test func missingFileIsAFailureNotACrash() async throws {
    let output = try await Self.simulate(path: "/nonexistent/scenario.json")
    #expect(output.status == 1)
    #expect(output.stderr.contains("no such file"))
  }
}

@Suite struct ReadmeScenarioTests {
  @Test func theReadmeScenarioRuns() async throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    let start = try #require(readme.range(of: "### Scenario files\n\n```json\n"))
    let end = try #require(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
    let path = FileManager.default.temporaryDirectory.appendingPathComponent(
      "readme-\(UUID().uuidString).json"
    ).path
    try Data(readme[start.upperBound..<end.lowerBound].utf8).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let output = try await SimulateCommandTests.simulate(path: path)
    #expect(output.status == 0, "\(output.stderr)")
    #expect(output.of("beaconEntered").count == 1)
    #expect(output.of("tripEnded").count == 1)
  }
}
