import BeaconCore

/// The game state derived from one load (the seed's "Deriving game state").
public struct GZoneState: Hashable, Sendable {
  /// The items of available games, as they came.
  public var available: [JSONValue]
  /// Rounds whose `endOn` is empty, null or missing.
  public var inProgress: [JSONValue]
  /// Rounds whose `endOn` is set.
  public var completed: [JSONValue]
  /// The rewards of the completed rounds, in round order.
  public var rewards: [JSONValue]
  /// The player's `currency`, as it came (null when missing).
  public var currency: JSONValue
  public var experience: Double
  /// `experience` as the backend wrote it, for output (`GZoneNumber.literal`).
  public var experienceText: String
  public var standing: GZoneLevelStanding

  public init(_ load: GZoneLoad) {
    available = load.availableGames
    inProgress = load.gameRounds.filter { !Self.isCompleted($0) }
    completed = load.gameRounds.filter(Self.isCompleted)
    rewards = completed.flatMap(Self.rewards(of:))
    currency = load.player["currency"] ?? .null
    experience = GZoneNumber.of(load.player["experience"]) ?? 0
    experienceText = GZoneNumber.literal(load.player["experience"]) ?? GZoneNumber.text(experience)
    standing = GZoneLevelStanding(
      experience: experience, levels: load.experienceLevels.compactMap(GZoneLevel.init))
  }

  public var level: GZoneLevel? { standing.level }
  public var nextLevel: GZoneLevel? { standing.nextLevel }
  public var progress: Double? { standing.progress }

  /// A round is completed when `endOn` is set: anything but missing, null, or an empty (or
  /// blank) string.
  public static func isCompleted(_ round: JSONValue) -> Bool {
    switch round["endOn"] {
    case nil, .null?: return false
    case .string(let s)?: return !s.trimmedWhitespace.isEmpty
    default: return true
    }
  }

  /// A round's `rewards` (none when missing or null).
  public static func rewards(of round: JSONValue) -> [JSONValue] { round["rewards"]?.arrayValue ?? [] }

  /// The `gzone status --json` object, keys in this order: `available`, `inProgress`,
  /// `completed`, `rewards`, `currency`, `level` (`{name, start, end}` or null), `nextLevel`,
  /// `progress` (0…1 or null).
  public var jsonText: String {
    var out = ""
    JSONWriter.writeObject(
      [
        ("available", .array(available)), ("inProgress", .array(inProgress)),
        ("completed", .array(completed)),
        ("rewards", .array(rewards)), ("currency", currency), ("level", level?.json ?? .null),
        ("nextLevel", nextLevel?.json ?? .null), ("progress", progress.map(JSONValue.double) ?? .null),
      ], to: &out)
    return out
  }
}
