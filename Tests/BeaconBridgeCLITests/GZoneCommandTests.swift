import BeaconBridgeCLI
import BeaconCore
import Foundation
import Testing

/// `gzone status` and `gzone diff` as a user runs them, on the fixture folders under
/// Tests/Fixtures/gzone.
@Suite struct GZoneCommandTests {
  static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .appendingPathComponent("Fixtures/gzone")

  static func path(_ name: String) -> String { fixtures.appendingPathComponent(name).path }

  static func run(_ argv: [String]) async -> (status: Int32, out: String, err: String) {
    let console = CapturingConsole()
    let status = await CLI.main(argv, console: console)
    return (status, console.stdout, console.stderr)
  }

  @Test func statusJSON() async throws {
    let result = await Self.run(["gzone", "status", Self.path("load1"), "--json"])
    #expect(result.status == 0, "\(result.err)")
    #expect(result.out.hasSuffix("}\n"))
    let json = try JSONValue.parse(Data(result.out.utf8))
    #expect(
      result.out.hasPrefix("{\"available\":["))
    #expect(json["available"]?.arrayValue?.count == 2)
    #expect(json["inProgress"]?.arrayValue?.map { $0["id"] } == [.string("r1")])
    #expect(json["completed"]?.arrayValue?.map { $0["id"] } == [.string("r2")])
    #expect(json["rewards"]?.arrayValue?.first?["amount"] == .int(10))
    #expect(json["currency"] == .int(20))
    #expect(json["level"] == .object(["name": .string("Silver"), "start": .int(100), "end": .int(249)]))
    #expect(json["nextLevel"]?["name"] == .string("Gold"))
    #expect(json["progress"]?.doubleValue == 0.503356)
  }

  @Test func statusText() async {
    let result = await Self.run(["gzone", "status", Self.path("load2")])
    #expect(result.status == 0)
    #expect(result.out.contains("Level:        Gold (250–499), 24% (highest)"))
    #expect(result.out.contains("Currency:     35"))
    #expect(result.out.contains("Rewards:      3\n  Smooth badge\n"))
    #expect(result.out.contains("In progress:  1\n  Smooth week 48 [roundId=48]"))
  }

  @Test func diffJSONLines() async throws {
    let result = await Self.run(["gzone", "diff", Self.path("load1"), Self.path("load2"), "--json"])
    #expect(result.status == 0, "\(result.err)")
    let lines = try result.out.split(separator: "\n").map { try JSONValue.parse(Data($0.utf8)) }
    #expect(
      lines.map { $0["type"]?.stringValue ?? "" } == [
        "roundCompleted", "rewardEarned", "rewardEarned", "roundStarted", "currencyChanged", "levelUp",
        "gameWithdrawn", "gameAvailable",
      ])
    #expect(lines[4]["old"] == .int(20) && lines[4]["new"] == .int(35))
    #expect(lines[5]["to"]?["name"] == .string("Gold"))
    #expect(lines[7]["game"]?["newField"]?["anything"] == .bool(true))
  }

  @Test func diffText() async {
    let result = await Self.run(["gzone", "diff", Self.path("load1"), Self.path("load2")])
    #expect(result.status == 0)
    #expect(result.out.contains("round completed: Smooth week 47 [id=r1]\n"))
    #expect(result.out.contains("level up: Silver → Gold\n"))
    #expect(result.out.contains("currency: 20 → 35\n"))
    let same = await Self.run(["gzone", "diff", Self.path("load1"), Self.path("load1")])
    #expect(same.out == "No changes.\n")
    let sameJSON = await Self.run(["gzone", "diff", Self.path("load1"), Self.path("load1"), "--json"])
    #expect(sameJSON.out == "")
  }

  @Test(arguments: [
    (["gzone", "status", "bad-json"], "bad-json/player.json: not valid JSON"),
    (
      ["gzone", "diff", "load1", "bad-shape"],
      "bad-shape/game-rounds.json: expected the game rounds as a JSON array, found object"
    ),
    (["gzone", "status", "missing"], "missing/experience-levels.json: no such folder"),
  ])
  func malformedPayloads(argv: [String], message: String) async {
    let resolved = argv.prefix(2) + argv.dropFirst(2).map { Self.path($0) }
    let result = await Self.run(Array(resolved))
    #expect(result.status == 1)
    #expect(result.out.isEmpty)
    #expect(result.err.contains(message), "\(result.err)")
    #expect(result.err.hasPrefix("beaconbridge: /"))
  }

  @Test(arguments: [
    (["gzone"], "missing action"),
    (["gzone", "play"], "unknown gzone action 'play'"),
    (["gzone", "status"], "missing payload folder DIR"),
    (["gzone", "diff", "a"], "missing NEW_DIR"),
    (["gzone", "status", "a", "b"], "unexpected argument \"b\""),
    (["gzone", "refresh", "--fast"], "unknown option --fast"),
  ])
  func usageErrors(argv: [String], message: String) async {
    let result = await Self.run(argv)
    #expect(result.status == 64)
    #expect(result.err.contains(message), "\(result.err)")
  }

  @Test func listedInHelp() async {
    #expect(await Self.run(["--help"]).out.contains("  gzone "))
    #expect(await Self.run(["gzone", "--help"]).out.contains("beaconbridge gzone diff OLD_DIR NEW_DIR"))
  }

  @Test func refreshWithoutADaemonSaysSo() async {
    // No daemon runs in the tests (and maybe no system bus): a sentence and exit 1, never a
    // pretend success.
    let result = await Self.run(["gzone", "refresh"])
    #expect(result.status == 1)
    #expect(result.err.hasPrefix("beaconbridge: gzone refresh: "))
  }
}
