import BeaconCore
import Foundation
import GZone
import Testing

/// G-Zone numbers print as they came (issue 28): the payloads are read with `JSONText`, so a
/// level bound of `100.50`, an id of `18446744073709551615` or an experience of `1.10` are not
/// re-encoded through a `Double` on their way to `gzone status` and the diff's events.
@Suite struct GZoneNumberTextTests {
  func load(_ levels: String, _ player: String, _ games: String = "[]", _ rounds: String = "[]") throws
    -> GZoneLoad
  {
    try GZoneLoad(
      experienceLevels: GZoneLoad.parse(Data(levels.utf8), as: .experienceLevels, origin: "l"),
      player: GZoneLoad.parse(Data(player.utf8), as: .player, origin: "p"),
      availableGames: GZoneLoad.parse(Data(games.utf8), as: .availableGames, origin: "g"),
      gameRounds: GZoneLoad.parse(Data(rounds.utf8), as: .gameRounds, origin: "r"))
  }

  @Test func statusPrintsTheNumbersAsTheyCame() throws {
    let state = GZoneState(
      try load(
        #"[{"levelName": "Bronze", "levelPointStart": 0.0, "levelPointEnd": 100.50}, {"levelName": "Silver", "levelPointStart": 100.50, "levelPointEnd": 1e3}]"#,
        #"{"experience": 1.10, "currency": {"coins": 18446744073709551615}}"#,
        #"[{"id": 18446744073709551615, "name": "quiz", "prize": -0}]"#))
    #expect(state.experience == 1.1)
    #expect(state.experienceText == "1.10")
    #expect(state.level?.startText == "0.0")
    #expect(state.level?.endText == "100.50")
    let json = state.jsonText
    #expect(json.contains(#""level":{"end":100.50,"name":"Bronze","start":0.0}"#), "\(json)")
    #expect(json.contains(#""nextLevel":{"end":1e3,"name":"Silver","start":100.50}"#), "\(json)")
    #expect(json.contains(#""currency":{"coins":18446744073709551615}"#), "\(json)")
    #expect(json.contains(#"{"id":18446744073709551615,"name":"quiz","prize":-0}"#), "\(json)")
    #expect(GZoneIdentity.gameKey(state.available[0]) == "id=18446744073709551615")
    // Still JSON: an independent reader takes it.
    #expect((try? JSONSerialization.jsonObject(with: Data(json.utf8))) != nil)
  }

  @Test func theDiffsEventsCarryTheNumbersAsTheyCame() throws {
    let levels =
      #"[{"levelName": "Bronze", "levelPointStart": 0, "levelPointEnd": 99.90}, {"levelName": "Silver", "levelPointStart": 99.90, "levelPointEnd": 250.0}]"#
    let before = try load(levels, #"{"experience": 5}"#)
    let after = try load(levels, #"{"experience": 120}"#)
    let events = GZoneDiff.events(from: before, to: after)
    let line = try #require(events.first { $0.type == "levelUp" }?.jsonText)
    #expect(line.contains(#""end":99.90"#) && line.contains(#""end":250.0"#), "\(line)")
    // Read back (a GZoneEvent signal), the level keeps its text.
    let json = try JSONText.parse(Array(line.utf8))
    #expect(GZoneEvent(json: json)?.jsonText == line)
  }
}
