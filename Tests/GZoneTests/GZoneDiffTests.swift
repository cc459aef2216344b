import BeaconCore
import Foundation
import GZone
import Testing

/// Diffs over sequences of loads, as the poller sees them.
@Suite struct GZoneDiffTests {
  func types(_ old: GZoneLoad, _ new: GZoneLoad) -> [String] {
    GZoneDiff.events(from: old, to: new).map(\.type)
  }

  @Test func aRoundsLifeOverFourPolls() {
    let coins: JSONValue = .object(["rewardName": .string("coins"), "amount": .int(10)])
    let loads = [
      Make.load(experience: 50, currency: .int(0)),
      Make.load(experience: 50, currency: .int(0)),
      Make.load(experience: 60, currency: .int(0), rounds: [Make.round("r1", endOn: .string(""))]),
      Make.load(
        experience: 120, currency: .int(10),
        rounds: [Make.round("r1", endOn: .string("2026-11-22"), rewards: [coins])]),
      Make.load(
        experience: 120, currency: .int(10),
        rounds: [Make.round("r1", endOn: .string("2026-11-22"), rewards: [coins])]),
    ]
    let events = zip(loads, loads.dropFirst()).map { GZoneDiff.events(from: $0, to: $1) }
    #expect(events[0].map(\.type) == [])
    #expect(events[1].map(\.type) == ["roundStarted"])
    #expect(events[2].map(\.type) == ["roundCompleted", "rewardEarned", "currencyChanged", "levelUp"])
    #expect(events[3].isEmpty)
    #expect(events[2][2] == .currencyChanged(old: .int(0), new: .int(10)))
    #expect(
      events[2][3]
        == .levelUp(
          from: GZoneLevel(name: "Bronze", start: 0, end: 99),
          to: GZoneLevel(name: "Silver", start: 100, end: 249)))
    #expect(events[2][1] == .rewardEarned(roundKey: "id=r1", reward: coins))
  }

  @Test func aRoundThatAppearsAlreadyEndedIsCompletedNotStarted() {
    let new = Make.load(rounds: [Make.round("r9", endOn: .string("2026-11-22"), rewards: [.int(1), .int(2)])])
    #expect(types(Make.load(), new) == ["roundCompleted", "rewardEarned", "rewardEarned"])
  }

  @Test func aRewardAddedToACompletedRoundIsEarnedOnce() {
    let r = { (rewards: [JSONValue]) in
      Make.load(rounds: [Make.round("r", endOn: .string("x"), rewards: rewards)])
    }
    #expect(types(r([.int(1)]), r([.int(1), .int(1)])) == ["rewardEarned"])
    #expect(types(r([.int(1), .int(1)]), r([.int(1), .int(1)])) == [])
    #expect(types(r([.int(1), .int(2)]), r([.int(2), .int(1)])) == [])
  }

  @Test func inProgressRewardsAreNotEarned() {
    let old = Make.load(rounds: [Make.round("r")])
    let new = Make.load(rounds: [Make.round("r", rewards: [.int(5)])])
    #expect(types(old, new) == [])
  }

  @Test func levelDownWhenTheBackendLowersExperience() {
    let events = GZoneDiff.events(from: Make.load(experience: 300), to: Make.load(experience: 150))
    #expect(
      events == [
        .levelDown(
          from: GZoneLevel(name: "Gold", start: 250, end: 499),
          to: GZoneLevel(name: "Silver", start: 100, end: 249))
      ])
  }

  @Test func levelUpFromBelowTheFirstRange() {
    let levels = [Make.level("A", 10, 20)]
    #expect(
      types(Make.load(levels: levels, experience: 0), Make.load(levels: levels, experience: 10)) == [
        "levelUp"
      ])
  }

  @Test func noLevelEventWhenLevelsAreMissingOrOnlyRenamed() {
    #expect(types(Make.load(levels: [], experience: 0), Make.load(experience: 300)) == [])
    #expect(
      types(Make.load(levels: [Make.level("A", 0, 10)]), Make.load(levels: [Make.level("B", 0, 10)])) == [])
  }

  @Test func currencyComparesNumbersByValue() {
    #expect(types(Make.load(currency: .int(10)), Make.load(currency: .double(10))) == [])
    #expect(types(Make.load(currency: .int(10)), Make.load(currency: .null)) == ["currencyChanged"])
  }

  @Test func gamesAvailableAndWithdrawn() {
    let old = Make.load(games: [Make.game("a"), Make.game("b")])
    let new = Make.load(games: [Make.game("b"), Make.game("c")])
    let events = GZoneDiff.events(from: old, to: new)
    #expect(
      events == [
        .gameWithdrawn(key: "gameId=a", game: Make.game("a")),
        .gameAvailable(key: "gameId=c", game: Make.game("c")),
      ])
  }

  @Test func roundIdentityFields() {
    #expect(GZoneIdentity.roundKey(.object(["id": .int(3), "roundId": .int(4)])) == "id=3")
    #expect(GZoneIdentity.roundKey(.object(["roundId": .string("x")])) == "roundId=x")
    #expect(GZoneIdentity.roundKey(.object(["gameRoundId": .int(9)])) == "gameRoundId=9")
    let bare: JSONValue = .object(["name": .string("n"), "endOn": .string("x"), "rewards": .array([.int(1)])])
    #expect(GZoneIdentity.roundKey(bare) == "{\"name\":\"n\"}")
    #expect(GZoneIdentity.gameKey(.object(["gameId": .int(1)])) == "gameId=1")
  }

  @Test func roundsWithoutIdsMatchAcrossEndingAndRewards() {
    let running: JSONValue = .object(["name": .string("week"), "startOn": .string("2026-11-16")])
    var ended = running.objectValue!
    ended["endOn"] = .string("2026-11-22")
    ended["rewards"] = .array([.string("badge")])
    let events = GZoneDiff.events(from: Make.load(rounds: [running]), to: Make.load(rounds: [.object(ended)]))
    #expect(events.map(\.type) == ["roundCompleted", "rewardEarned"])
  }

  @Test func identicalIdLessRoundsCountSeparately() {
    let round: JSONValue = .object(["name": .string("same")])
    #expect(types(Make.load(rounds: [round]), Make.load(rounds: [round, round])) == ["roundStarted"])
    let events = GZoneDiff.events(from: Make.load(), to: Make.load(rounds: [round, round]))
    #expect(events.count == 2)
    if case .roundStarted(let key, _) = events[1] { #expect(key.hasSuffix("#2")) }
  }

  @Test func eventLinesLeadWithType() throws {
    for event in GZoneDiff.events(
      from: Make.load(games: [Make.game("a")]),
      to: Make.load(experience: 300, currency: .int(3), games: [Make.game("b")], rounds: [Make.round("r")]))
    {
      #expect(event.jsonText.hasPrefix("{\"type\":\"\(event.type)\""))
      #expect(try JSONValue.parse(Data(event.jsonText.utf8))["type"]?.stringValue == event.type)
      #expect(!event.summary.isEmpty)
    }
  }

  @Test func roundsThatVanishOrReopenMakeNoEvent() {
    let done = Make.load(rounds: [Make.round("r", endOn: .string("x"))])
    #expect(types(done, Make.load()) == [])
    #expect(types(done, Make.load(rounds: [Make.round("r")])) == [])
  }
}
