import BeaconCore
import Foundation
import GZone

/// Builds loads for the tests.
enum Make {
  static func level(_ name: String, _ start: Double, _ end: Double) -> JSONValue {
    .object(["levelName": .string(name), "levelPointStart": .double(start), "levelPointEnd": .double(end)])
  }

  static func round(
    _ id: String?, endOn: JSONValue? = nil, rewards: [JSONValue]? = nil, extra: [String: JSONValue] = [:]
  )
    -> JSONValue
  {
    var fields = extra
    if let id { fields["id"] = .string(id) }
    if let endOn { fields["endOn"] = endOn }
    if let rewards { fields["rewards"] = .array(rewards) }
    return .object(fields)
  }

  static func game(_ id: String) -> JSONValue {
    .object(["gameId": .string(id), "name": .string("game \(id)")])
  }

  static let levels: [JSONValue] = [
    level("Bronze", 0, 99), level("Silver", 100, 249), level("Gold", 250, 499),
  ]

  static func load(
    levels: [JSONValue] = Make.levels, experience: Double = 0, currency: JSONValue = .int(0),
    games: [JSONValue] = [], rounds: [JSONValue] = []
  ) -> GZoneLoad {
    try! GZoneLoad(
      experienceLevels: .array(levels),
      player: .object(["experience": .double(experience), "currency": currency]),
      availableGames: .array(games), gameRounds: .array(rounds))
  }

  static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .appendingPathComponent("Fixtures/gzone")

  static func fixture(_ name: String) -> String { fixtures.appendingPathComponent(name).path }
}
