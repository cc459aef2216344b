import BeaconCore

/// A change between two loads: what polling turns into events.
public enum GZoneEvent: Hashable, Sendable {
  /// A round appeared that has no end yet.
  case roundStarted(key: String, round: JSONValue)
  /// A round's `endOn` is newly set (also a round that appeared already ended).
  case roundCompleted(key: String, round: JSONValue)
  /// A reward of a completed round that the previous load did not have as completed.
  case rewardEarned(roundKey: String, reward: JSONValue)
  case levelUp(from: GZoneLevel?, to: GZoneLevel?)
  case levelDown(from: GZoneLevel?, to: GZoneLevel?)
  case currencyChanged(old: JSONValue, new: JSONValue)
  case gameAvailable(key: String, game: JSONValue)
  case gameWithdrawn(key: String, game: JSONValue)

  public var type: String {
    switch self {
    case .roundStarted: "roundStarted"
    case .roundCompleted: "roundCompleted"
    case .rewardEarned: "rewardEarned"
    case .levelUp: "levelUp"
    case .levelDown: "levelDown"
    case .currencyChanged: "currencyChanged"
    case .gameAvailable: "gameAvailable"
    case .gameWithdrawn: "gameWithdrawn"
    }
  }

  /// The fields after `type`.
  public var fields: [(key: String, value: JSONValue)] {
    switch self {
    case .roundStarted(let key, let round), .roundCompleted(let key, let round):
      [("key", .string(key)), ("round", round)]
    case .rewardEarned(let roundKey, let reward): [("roundKey", .string(roundKey)), ("reward", reward)]
    case .levelUp(let from, let to), .levelDown(let from, let to):
      [("from", from?.json ?? .null), ("to", to?.json ?? .null)]
    case .currencyChanged(let old, let new): [("old", old), ("new", new)]
    case .gameAvailable(let key, let game), .gameWithdrawn(let key, let game):
      [("key", .string(key)), ("game", game)]
    }
  }

  /// One JSON line: `type` first, then the fields.
  public var jsonText: String {
    var out = ""
    JSONWriter.writeObject([("type", .string(type))] + fields, to: &out)
    return out
  }

  /// Reads an event back from its JSON (a `GZoneEvent` signal, a `GZoneRefresh` reply); nil
  /// for an unknown type or missing fields.
  public init?(json: JSONValue) {
    func level(_ key: String) -> GZoneLevel?? {
      guard let value = json[key] else { return nil }
      if value == .null { return .some(nil) }
      guard let name = value["name"]?.stringValue, let start = value["start"]?.doubleValue,
        let end = value["end"]?.doubleValue
      else { return nil }
      var level = GZoneLevel(name: name, start: start, end: end)
      level.startText = value["start"].flatMap(GZoneNumber.literal) ?? level.startText
      level.endText = value["end"].flatMap(GZoneNumber.literal) ?? level.endText
      return .some(level)
    }
    let key = json["key"]?.stringValue
    switch json["type"]?.stringValue {
    case "roundStarted"?, "roundCompleted"?:
      guard let key, let round = json["round"] else { return nil }
      self =
        json["type"]?.stringValue == "roundStarted"
        ? .roundStarted(key: key, round: round) : .roundCompleted(key: key, round: round)
    case "rewardEarned"?:
      guard let roundKey = json["roundKey"]?.stringValue, let reward = json["reward"] else { return nil }
      self = .rewardEarned(roundKey: roundKey, reward: reward)
    case "levelUp"?, "levelDown"?:
      guard let from = level("from"), let to = level("to") else { return nil }
      self =
        json["type"]?.stringValue == "levelUp" ? .levelUp(from: from, to: to) : .levelDown(from: from, to: to)
    case "currencyChanged"?:
      guard let old = json["old"], let new = json["new"] else { return nil }
      self = .currencyChanged(old: old, new: new)
    case "gameAvailable"?, "gameWithdrawn"?:
      guard let key, let game = json["game"] else { return nil }
      self =
        json["type"]?.stringValue == "gameAvailable"
        ? .gameAvailable(key: key, game: game) : .gameWithdrawn(key: key, game: game)
    default:
      return nil
    }
  }

  /// One readable line.
  public var summary: String {
    switch self {
    case .roundStarted(let key, let round): "round started: \(Self.title(round, key: key))"
    case .roundCompleted(let key, let round): "round completed: \(Self.title(round, key: key))"
    case .rewardEarned(let roundKey, let reward):
      "reward earned: \(Self.title(reward, key: "")) (round \(roundKey))"
    case .levelUp(let from, let to): "level up: \(from?.name ?? "none") → \(to?.name ?? "none")"
    case .levelDown(let from, let to): "level down: \(from?.name ?? "none") → \(to?.name ?? "none")"
    case .currencyChanged(let old, let new): "currency: \(old.compactText) → \(new.compactText)"
    case .gameAvailable(let key, let game): "game available: \(Self.title(game, key: key))"
    case .gameWithdrawn(let key, let game): "game withdrawn: \(Self.title(game, key: key))"
    }
  }

  /// A display name: the item's `name`, `title`, `gameName` or `rewardName` with the key in
  /// brackets, else the key (an empty key: the name alone, else the item's JSON).
  public static func title(_ item: JSONValue, key: String) -> String {
    for field in ["name", "title", "gameName", "rewardName"] {
      if let s = item[field]?.stringValue, !s.isEmpty { return key.isEmpty ? s : "\(s) [\(key)]" }
    }
    return key.isEmpty ? item.compactText : key
  }
}
