import BeaconCore

/// How rounds and games are matched from one load to the next.
///
/// - A round's key is its `id`, else `roundId`, else `gameRoundId` (a string or a number).
/// - A game's key is its `id`, else `gameId`.
/// - Without an id field, the key is the canonical JSON (keys sorted, compact) of the item
///   without the fields that change as a round goes on: `endOn` and `rewards`. Such a round is
///   matched as long as its other fields stay the same; a change to them reads as one round
///   ending its life in the list and another appearing.
/// - Two items of one load with the same key get `#2`, `#3`, … appended, in list order, so
///   identical id-less rounds still count separately.
public enum GZoneIdentity {
  public static let roundIdFields = ["id", "roundId", "gameRoundId"]
  public static let gameIdFields = ["id", "gameId"]
  /// Left out of the fallback key of an item without an id.
  public static let volatileFields: Set<String> = ["endOn", "rewards"]

  public static func roundKey(_ round: JSONValue) -> String { key(round, idFields: roundIdFields) }
  public static func gameKey(_ game: JSONValue) -> String { key(game, idFields: gameIdFields) }

  static func key(_ item: JSONValue, idFields: [String]) -> String {
    for field in idFields {
      switch item[field] {
      case .string(let s)? where !s.isEmpty: return "\(field)=\(s)"
      case .int(let i)?: return "\(field)=\(i)"
      case .double(let d)?: return "\(field)=\(GZoneNumber.text(d))"
      case .raw(let text)?: return "\(field)=\(text)"
      default: continue
      }
    }
    guard let fields = item.objectValue else { return item.compactText }
    return JSONValue.object(fields.filter { !volatileFields.contains($0.key) }).compactText
  }

  /// Each item with its key, duplicates numbered.
  static func keyed(_ items: [JSONValue], key: (JSONValue) -> String) -> [(key: String, item: JSONValue)] {
    var seen: [String: Int] = [:]
    return items.map { item in
      let base = key(item)
      let n = (seen[base] ?? 0) + 1
      seen[base] = n
      return (n == 1 ? base : "\(base)#\(n)", item)
    }
  }
}
