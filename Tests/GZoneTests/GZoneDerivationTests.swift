import BeaconCore
import Foundation
import GZone
import Testing

/// The derivation rules, one row per rule and edge case.
@Suite struct GZoneDerivationTests {
  struct LevelCase: Sendable, CustomTestStringConvertible {
    var label: String
    var levels: [JSONValue]
    var experience: Double
    var level: String?
    var next: String?
    var progress: Double?
    var testDescription: String { label }
  }

  static let levelCases: [LevelCase] = [
    .init(
      label: "inside a range", levels: Make.levels, experience: 175, level: "Silver", next: "Gold",
      progress: 75.0 / 149),
    .init(
      label: "at a range's start", levels: Make.levels, experience: 100, level: "Silver", next: "Gold",
      progress: 0),
    .init(
      label: "at a range's end", levels: Make.levels, experience: 249, level: "Silver", next: "Gold",
      progress: 1),
    .init(
      label: "unsorted levels", levels: Make.levels.reversed(), experience: 50, level: "Bronze",
      next: "Silver",
      progress: 50.0 / 99),
    .init(
      label: "in a gap: the lower level, done",
      levels: [Make.level("A", 0, 100), Make.level("B", 200, 300)], experience: 150, level: "A", next: "B",
      progress: 1),
    .init(
      label: "overlapping ranges: the higher one",
      levels: [Make.level("A", 0, 150), Make.level("B", 100, 200)], experience: 120, level: "B", next: nil,
      progress: 0.2),
    .init(
      label: "touching ranges: the higher one",
      levels: [Make.level("A", 0, 100), Make.level("B", 100, 200)], experience: 100, level: "B", next: nil,
      progress: 0),
    .init(
      label: "below the first range", levels: [Make.level("A", 10, 20), Make.level("B", 21, 30)],
      experience: 5,
      level: nil, next: "A", progress: 0),
    .init(
      label: "zero-width range",
      levels: [Make.level("A", 0, 9), Make.level("Z", 10, 10), Make.level("C", 11, 20)],
      experience: 10, level: "Z", next: "C", progress: 1),
    .init(label: "empty list", levels: [], experience: 42, level: nil, next: nil, progress: nil),
    .init(
      label: "above the highest", levels: Make.levels, experience: 9000, level: "Gold", next: nil, progress: 1
    ),
    .init(
      label: "negative experience", levels: Make.levels, experience: -3, level: nil, next: "Bronze",
      progress: 0),
    .init(
      label: "same start, longer range wins",
      levels: [Make.level("Long", 0, 100), Make.level("Short", 0, 50)],
      experience: 25, level: "Long", next: nil, progress: 0.25),
  ]

  @Test(arguments: levelCases)
  func level(_ row: LevelCase) {
    let state = GZoneState(Make.load(levels: row.levels, experience: row.experience))
    #expect(state.level?.name == row.level)
    #expect(state.nextLevel?.name == row.next)
    switch (state.progress, row.progress) {
    case (nil, nil): break
    case (let got?, let want?): #expect(abs(got - want) < 1e-9, "progress \(got), expected \(want)")
    default:
      Issue.record(
        "progress \(String(describing: state.progress)), expected \(String(describing: row.progress))")
    }
  }

  @Test func levelNameFromNameAndNumericStrings() throws {
    let levels: [JSONValue] = [
      .object(["name": .string("Plain"), "levelPointStart": .string("0"), "levelPointEnd": .string("10")]),
      .object([
        "levelName": .int(2), "name": .string("ignored"), "levelPointStart": .int(11),
        "levelPointEnd": .int(20),
      ]),
    ]
    #expect(GZoneState(Make.load(levels: levels, experience: 5)).level?.name == "Plain")
    #expect(GZoneState(Make.load(levels: levels, experience: 15)).level?.name == "2")
  }

  struct RoundCase: Sendable, CustomTestStringConvertible {
    var label: String
    var endOn: JSONValue?
    var completed: Bool
    var testDescription: String { label }
  }

  static let roundCases: [RoundCase] = [
    .init(label: "endOn missing", endOn: nil, completed: false),
    .init(label: "endOn null", endOn: .null, completed: false),
    .init(label: "endOn empty", endOn: .string(""), completed: false),
    .init(label: "endOn blank", endOn: .string("  "), completed: false),
    .init(label: "endOn a date", endOn: .string("2026-11-22T10:00:00Z"), completed: true),
    .init(label: "endOn a timestamp", endOn: .int(1_764_000_000), completed: true),
  ]

  @Test(arguments: roundCases)
  func roundStatus(_ row: RoundCase) {
    let round = Make.round("r", endOn: row.endOn, rewards: [.object(["rewardName": .string("x")])])
    let state = GZoneState(Make.load(rounds: [round]))
    #expect(state.completed.count == (row.completed ? 1 : 0))
    #expect(state.inProgress.count == (row.completed ? 0 : 1))
    // Rewards count only for completed rounds.
    #expect(state.rewards.count == (row.completed ? 1 : 0))
  }

  @Test func rewardsCurrencyAndAvailableKeepEveryField() {
    let reward: JSONValue = .object(["rewardName": .string("badge"), "unknown": .array([.int(1)])])
    let load = Make.load(
      experience: 10, currency: .object(["amount": .int(5), "unit": .string("coins")]),
      games: [Make.game("g1"), .object(["whatever": .bool(true)])],
      rounds: [
        Make.round("a", endOn: .string("2026-01-01"), rewards: [reward, reward]),
        Make.round("b", endOn: .string("2026-01-02")),  // no rewards at all
        Make.round("c", rewards: [.object(["rewardName": .string("not yet")])]),
      ])
    let state = GZoneState(load)
    #expect(state.rewards == [reward, reward])
    #expect(state.available.count == 2)
    #expect(state.available[1]["whatever"] == .bool(true))
    #expect(state.currency["unit"]?.stringValue == "coins")
    #expect(state.inProgress.map { $0["id"]?.stringValue } == ["c"])
  }

  @Test func statusJSONHasExactlyTheDocumentedKeysInOrder() throws {
    let state = GZoneState(Make.load(experience: 175, currency: .int(20)))
    let text = state.jsonText
    #expect(
      text.hasPrefix("{\"available\":[],\"inProgress\":[],\"completed\":[],\"rewards\":[],\"currency\":20,"))
    let json = try JSONValue.parse(Data(text.utf8))
    #expect(
      Set(json.objectValue?.keys.map { $0 } ?? [])
        == ["available", "inProgress", "completed", "rewards", "currency", "level", "nextLevel", "progress"])
    #expect(json["level"] == .object(["name": .string("Silver"), "start": .int(100), "end": .int(249)]))
    #expect(json["nextLevel"]?["name"]?.stringValue == "Gold")
  }

  @Test func emptyLevelsPrintNulls() throws {
    let json = try JSONValue.parse(Data(GZoneState(Make.load(levels: [])).jsonText.utf8))
    #expect(json["level"] == .null)
    #expect(json["nextLevel"] == .null)
    #expect(json["progress"] == .null)
  }
}
