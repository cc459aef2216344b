import BeaconCore

/// Compares two loads. Pure: the same two loads always give the same events, in this order:
///
/// 1. rounds, in the new load's order: `roundStarted` for a new round without an end;
///    `roundCompleted` for a round whose `endOn` is newly set (or a new round already ended),
///    then one `rewardEarned` per reward it has as a completed round that the old load did not
///    (rewards compared by their canonical JSON, as a multiset);
/// 2. `currencyChanged` (numbers compare by value: `10` and `10.0` are the same);
/// 3. `levelUp` or `levelDown`, when the current level changed, by its range (start, then end;
///    no level, below the first range, is lowest); none when either load has no levels at all,
///    and none for a level that is only renamed;
/// 4. `gameWithdrawn` in the old load's order, then `gameAvailable` in the new load's order.
///
/// A round that disappears, or whose `endOn` is cleared, makes no event: the backend has no such
/// transition in the seed, and a round that completes again later is reported then.
public enum GZoneDiff {
  public static func events(from old: GZoneLoad, to new: GZoneLoad) -> [GZoneEvent] {
    var events: [GZoneEvent] = []
    let oldRounds = Dictionary(
      GZoneIdentity.keyed(old.gameRounds, key: GZoneIdentity.roundKey(_:)).map { ($0.key, $0.item) },
      uniquingKeysWith: { a, _ in a })
    for (key, round) in GZoneIdentity.keyed(new.gameRounds, key: GZoneIdentity.roundKey(_:)) {
      let previous = oldRounds[key]
      let wasCompleted = previous.map(GZoneState.isCompleted) ?? false
      let isCompleted = GZoneState.isCompleted(round)
      if previous == nil && !isCompleted { events.append(.roundStarted(key: key, round: round)) }
      if isCompleted && !wasCompleted { events.append(.roundCompleted(key: key, round: round)) }
      guard isCompleted else { continue }
      var before: [String: Int] = [:]
      if wasCompleted, let previous {
        for reward in GZoneState.rewards(of: previous) { before[reward.compactText, default: 0] += 1 }
      }
      for reward in GZoneState.rewards(of: round) {
        let text = reward.compactText
        if let n = before[text], n > 0 {
          before[text] = n - 1
        } else {
          events.append(.rewardEarned(roundKey: key, reward: reward))
        }
      }
    }

    let oldState = GZoneState(old)
    let newState = GZoneState(new)
    if !sameValue(oldState.currency, newState.currency) {
      events.append(.currencyChanged(old: oldState.currency, new: newState.currency))
    }
    if oldState.progress != nil, newState.progress != nil, oldState.level != newState.level {
      let from = oldState.level.map { ($0.start, $0.end) } ?? (-.infinity, -.infinity)
      let to = newState.level.map { ($0.start, $0.end) } ?? (-.infinity, -.infinity)
      if to > from { events.append(.levelUp(from: oldState.level, to: newState.level)) }
      if to < from { events.append(.levelDown(from: oldState.level, to: newState.level)) }
    }

    let oldGames = GZoneIdentity.keyed(old.availableGames, key: GZoneIdentity.gameKey(_:))
    let newGames = GZoneIdentity.keyed(new.availableGames, key: GZoneIdentity.gameKey(_:))
    let oldKeys = Set(oldGames.map(\.key))
    let newKeys = Set(newGames.map(\.key))
    for (key, game) in oldGames where !newKeys.contains(key) {
      events.append(.gameWithdrawn(key: key, game: game))
    }
    for (key, game) in newGames where !oldKeys.contains(key) {
      events.append(.gameAvailable(key: key, game: game))
    }
    return events
  }

  /// Equal JSON, with numbers compared by value.
  static func sameValue(_ a: JSONValue, _ b: JSONValue) -> Bool {
    if let x = GZoneNumber.of(a), let y = GZoneNumber.of(b), a.stringValue == nil, b.stringValue == nil {
      return x == y
    }
    return a == b
  }
}
