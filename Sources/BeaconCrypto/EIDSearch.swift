/// One search for an EID not in the resolver's table, taken out of the resolver to run elsewhere
/// in slices (the daemon's `EIDSearchService`), so that a stranger's EID never holds up what
/// the resolver's owner does meanwhile. It holds what it needs of each pairing (the key, K and
/// the windows to try, from the expected one outward) as the resolver stood when it was taken;
/// `EIDResolver.found` checks that the pairing is still there before taking the answer.
public struct EIDSearch: Sendable {
  /// How far a `near` search looks either side of each pairing's expected window: a tracked
  /// beacon's next EID, or a beacon whose clock the store kept across a restart, is found by it
  /// at a cost of a few AES operations per pairing.
  public static let nearWindows: Int64 = 2

  struct Candidate: Sendable {
    var id: KeyPairingID
    var identityKey: AES128Key
    var rotationExponent: RotationExponent
    var k: Int64
    /// The offset the windows are around (the resolver's, or the one before a clock step).
    var offset: Int64
    var first: Int64
    var last: Int64
    var center: Int64
  }

  public enum Progress: Equatable, Sendable {
    /// The EID is this pairing's, in `window`, against `offset`.
    case found(KeyPairingID, window: Int64, offset: Int64)
    /// No pairing makes it within the windows searched.
    case notFound
    /// Not done: call `run` again.
    case searching
  }

  public let eid: UInt64
  /// The box's seconds the windows were worked out at.
  public let boxSeconds: Int64
  public let near: Bool
  var candidates: [Candidate]
  var index = 0
  var step: Int64 = 0
  var keys: [Int64: AES128Key] = [:]
  /// AES operations spent so far: block encryptions and key expansions (a temporary key is one
  /// of each).
  public private(set) var blockEncryptions = 0
  public private(set) var keyExpansions = 0
  public var operations: Int { blockEncryptions + keyExpansions }

  init(eid: UInt64, boxSeconds: Int64, near: Bool, candidates: [Candidate]) {
    self.eid = eid
    self.boxSeconds = boxSeconds
    self.near = near
    self.candidates = candidates
  }

  /// Pairings left to try, for the tests.
  public var isDone: Bool { index >= candidates.count }

  /// Searches until about `budget` AES operations are spent, the EID is found or every window
  /// was tried.
  public mutating func run(operations budget: Int) -> Progress {
    let stop = operations + max(1, budget)
    while index < candidates.count {
      let candidate = candidates[index]
      while true {
        let above = candidate.center + step
        let below = candidate.center - step - 1
        let aboveIn = above <= candidate.last
        let belowIn = below >= candidate.first
        if !aboveIn && !belowIn { break }
        for window in [above, below] where window >= candidate.first && window <= candidate.last {
          if compute(window: window, candidate) == eid {
            return .found(candidate.id, window: window, offset: candidate.offset)
          }
        }
        step += 1
        if operations >= stop { return .searching }
      }
      index += 1
      step = 0
      keys = [:]
      if operations >= stop { return index < candidates.count ? .searching : .notFound }
    }
    return .notFound
  }

  private mutating func compute(window: Int64, _ candidate: Candidate) -> UInt64 {
    let clock = UInt32(window << candidate.k)
    let keyIndex = Int64(clock >> 16)
    let temporaryKey: AES128Key
    if let cached = keys[keyIndex] {
      temporaryKey = cached
    } else {
      temporaryKey = EddystoneEID.temporaryKey(identityKey: candidate.identityKey, clock: clock)
      blockEncryptions += 1
      keyExpansions += 1
      keys[keyIndex] = temporaryKey
    }
    blockEncryptions += 1
    return EddystoneEID.eid(
      temporaryKey: temporaryKey, rotationExponent: candidate.rotationExponent, clock: clock)
  }
}

extension EIDResolver {
  /// A search for `eid` at `t` over every pairing, to run elsewhere (`EIDSearch`): `near` looks
  /// `EIDSearch.nearWindows` either side of each expected window, otherwise the whole tolerance.
  /// A pairing whose clock stepped and was not heard since is tried around both offsets.
  public func search(for eid: UInt64, atBoxSeconds t: Int64, near: Bool) -> EIDSearch {
    var candidates: [EIDSearch.Candidate] = []
    for index in slots.indices {
      guard let slot = slots[index] else { continue }
      let clock = clocks[index]
      for offset in [clock.offset, clock.unmovedOffset].compactMap({ $0 }) {
        let expected = Self.expected(t, offset)
        var low = max(0, expected - configuration.tolerance)
        var high = min(Self.maxClock, expected + configuration.tolerance)
        guard low <= high else { continue }
        let center = min(max(expected, 0), Self.maxClock) >> clock.k
        if near {
          low = max(low, (center - EIDSearch.nearWindows) << clock.k)
          high = min(high, ((center + EIDSearch.nearWindows + 1) << clock.k) - 1)
          guard low <= high else { continue }
        }
        candidates.append(
          EIDSearch.Candidate(
            id: clock.id, identityKey: slot.pairing.identityKey,
            rotationExponent: slot.pairing.rotationExponent,
            k: clock.k, offset: offset, first: low >> clock.k, last: high >> clock.k, center: center))
      }
    }
    return EIDSearch(eid: eid, boxSeconds: t, near: near, candidates: candidates)
  }

  /// What a search run elsewhere found, taken at `t`: the pairing's clock is tracked and its
  /// table filled, as if the resolver had searched itself; a replay is refused. Nil when the
  /// pairing is gone since the search was taken.
  public mutating func found(
    _ search: EIDSearch, pairing id: KeyPairingID, window: Int64, offset: Int64, atBoxSeconds t: Int64
  ) -> EIDResolution? {
    guard let index = slotIndex(of: id) else { return nil }
    statistics.searches += 1
    statistics.blockEncryptions += search.blockEncryptions
    statistics.keyExpansions += search.keyExpansions
    if clocks[index].offset != offset, clocks[index].unmovedOffset == offset { clocks[index].offset = offset }
    return acceptFound(eid: search.eid, slot: index, window: window, at: t)
  }

  /// A search run elsewhere that found nothing: the EID is answered as unknown without a new
  /// search for `negativeCacheSeconds`. A near search that found nothing is not remembered: the
  /// whole tolerance is still to be tried.
  public mutating func notFound(_ search: EIDSearch, atBoxSeconds t: Int64) {
    statistics.searches += 1
    statistics.blockEncryptions += search.blockEncryptions
    statistics.keyExpansions += search.keyExpansions
    if !search.near { rememberUnknown(search.eid, at: t) }
  }
}
