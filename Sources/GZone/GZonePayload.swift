/// The four G-Zone requests a game screen needs (the seed's "Data to load"), each the raw
/// `rawResponse` JSON of its request.
public enum GZonePayload: String, CaseIterable, Hashable, Sendable {
  /// `getExperienceLevel`: an array of `{levelName or name, levelPointStart, levelPointEnd}`.
  case experienceLevels
  /// `getPlayerInfo(forVehicleUnitId:)`: `{experience, currency}`.
  case player
  /// `getPlayerAvailableGames(forVehicleUnitId:)`: an array of objects.
  case availableGames
  /// `getPlayerGameRounds(forPolicyNumber:)`: an array of objects with `endOn` and `rewards`.
  case gameRounds

  /// The file name in a payload folder (docs/DESIGN.md, Contracts).
  public var fileName: String {
    switch self {
    case .experienceLevels: "experience-levels.json"
    case .player: "player.json"
    case .availableGames: "available-games.json"
    case .gameRounds: "game-rounds.json"
    }
  }
}
