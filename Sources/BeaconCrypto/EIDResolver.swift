/// How the integration names a key pairing (the store's row, say): a plain number, so the
/// resolvers are not generic and run specialized from any module.
public struct KeyPairingID: RawRepresentable, Hashable, Sendable, CustomStringConvertible,
  ExpressibleByIntegerLiteral
{
  public let rawValue: Int64
  public init(rawValue: Int64) { self.rawValue = rawValue }
  public init(_ value: Int) { rawValue = Int64(value) }
  public init(integerLiteral value: Int64) { rawValue = value }
  public var description: String { String(rawValue) }
}

/// One Eddystone-EID pairing: the identity key, K, and the offset from the box's clock to the
/// beacon's (beacon clock = box seconds + `clockOffset`).
public struct EIDPairing: Sendable {
  public let id: KeyPairingID
  public let identityKey: AES128Key
  public let rotationExponent: RotationExponent
  public let clockOffset: Int64
  /// The newest window heard from this beacon, kept across restarts so that a replay stays
  /// refused after one (`EIDResolver.tracking(of:)` gives it back to be stored).
  public let heardWindow: UInt32?

  public init(
    id: KeyPairingID, identityKey: AES128Key, rotationExponent: RotationExponent, clockOffset: Int64,
    heardWindow: UInt32? = nil
  ) {
    self.id = id
    self.identityKey = identityKey
    self.rotationExponent = rotationExponent
    self.clockOffset = clockOffset
    self.heardWindow = heardWindow
  }

  /// A pairing from the beacon's clock as its provisioning tool reports it, at a box time.
  public init(
    id: KeyPairingID, identityKey: AES128Key, rotationExponent: RotationExponent, beaconClock: UInt32,
    atBoxSeconds boxSeconds: Int64
  ) {
    self.init(
      id: id, identityKey: identityKey, rotationExponent: rotationExponent,
      clockOffset: Int64(beaconClock) - boxSeconds)
  }
}

/// What an EID came to.
public enum EIDResolution: Equatable, Sendable {
  /// The EID is the pairing's for `window` (the beacon's clock >> K).
  case resolved(KeyPairingID, window: UInt32)
  /// The pairing's, but from a window older than the newest heard: refused, and counted.
  case replay(KeyPairingID, window: UInt32, heardWindow: UInt32)
  /// No pairing's within the tolerance.
  case unknown(EIDUnknownReason)
}

public enum EIDUnknownReason: Equatable, Sendable {
  /// Searched: no pairing makes this EID within the tolerance of its expected clock.
  case notPaired
  /// A cached EID whose window is now outside the tolerance (the beacon was away that long).
  case outsideTolerance
  /// Searched within `negativeCacheSeconds`, and unknown then.
  case recentlyUnknown
  /// The search budget is spent (a flood of unknown EIDs); the next advertisement tries again.
  case searchDeferred
}

/// What the resolver did, for `status`, `doctor` and the tests. Counts only grow.
public struct EIDResolverStatistics: Equatable, Sendable {
  /// EIDs looked up.
  public var lookups = 0
  /// Answered from the table of expected EIDs without any AES.
  public var cacheHits = 0
  /// Searches over the tolerance, and searches refused by the budget.
  public var searches = 0
  public var searchesDeferred = 0
  /// Answered from the negative cache.
  public var negativeHits = 0
  public var resolved = 0
  public var replaysRefused = 0
  public var unknown = 0
  /// AES-128 block encryptions and key expansions (each temporary key is one of each).
  public var blockEncryptions = 0
  public var keyExpansions = 0
}

/// Resolves Eddystone-EIDs to pairings (docs/authentication.md).
///
/// A value-type state machine in `BeaconPipeline`'s shape: every call takes the box's time in
/// seconds and reads no clock. For each pairing it keeps the EIDs of the previous, current and
/// next windows of the beacon's clock as heard in one table, so a steady stream of advertisements
/// costs one dictionary lookup each; a rotation costs one AES block (two more when the temporary
/// key rolls over, every 65,536 s). An EID not in the table is searched for within `tolerance`
/// seconds either side of each pairing's expected clock, at a bounded cost
/// (`searchOperations(tolerance:rotationExponent:)` per pairing) and under a budget of AES
/// operations per second, so a flood of strangers' EIDs cannot take the CPU.
public struct EIDResolver: Sendable {
  public struct Configuration: Sendable {
    /// Seconds either side of the expected clock searched for an unknown EID ([ActiveBeacon]
    /// EIDClockTolerance). One day covers the spec's power-loss recovery (a beacon restores its
    /// clock from a daily save).
    /// Clamped to 0...`maximumTolerance`.
    public var tolerance: Int64 = 86_400 {
      didSet { tolerance = min(max(0, tolerance), Self.maximumTolerance) }
    }
    /// A week: the search's cost grows with the tolerance (`searchOperations`), and no beacon's
    /// clock is expected to be further off than its daily save.
    public static let maximumTolerance: Int64 = 7 * 86_400
    /// How long an EID that a search did not find is answered as unknown without a new search.
    public var negativeCacheSeconds: Int64 = 300
    /// How many such EIDs are remembered (the oldest forgotten first).
    public var negativeCacheCapacity = 1_024
    /// AES operations per second of box time that searches may spend, on average, and how many
    /// seconds of it may be spent at once. A search runs while the budget is positive and is
    /// charged what it cost, so one search always completes.
    /// Clamped to 0...1,000,000,000 and 0...3,600, so the budget's arithmetic cannot overflow.
    public var searchOperationsPerSecond: Int64 = 200_000 {
      didSet { searchOperationsPerSecond = min(max(0, searchOperationsPerSecond), 1_000_000_000) }
    }
    public var searchBurstSeconds: Int64 = 10 {
      didSet { searchBurstSeconds = min(max(0, searchBurstSeconds), 3_600) }
    }

    public init(tolerance: Int64 = 86_400) {
      self.tolerance = min(max(0, tolerance), Self.maximumTolerance)
    }
  }

  /// Where one pairing's clock stands, to be stored and given back in `EIDPairing`.
  public struct Tracking: Equatable, Sendable {
    public var clockOffset: Int64
    public var heardWindow: UInt32?
  }

  /// What the steady stream reads and writes, apart from the keys and dictionaries, so that a
  /// table hit touches plain values only (no reference counting, no copy on write).
  private struct Clock: Sendable {
    var id: KeyPairingID
    var k: Int64
    var offset: Int64
    var heardWindow: Int64?
    /// The window the table's three entries are around.
    var tableCenter: Int64?
  }

  private struct Slot: Sendable {
    var pairing: EIDPairing
    /// The windows whose EIDs are in the table: at most the previous, current and next.
    var cachedWindows: [Int64: UInt64] = [:]
    /// Temporary keys by clock >> 16, for the cached windows only.
    var temporaryKeys: [Int64: AES128Key] = [:]
  }

  private struct Entry: Sendable {
    var slot: Int
    var window: Int64
  }

  public let configuration: Configuration
  public private(set) var statistics = EIDResolverStatistics()
  /// Parallel: a removed pairing leaves nil in `slots` (and its clock unused) for the next one.
  private var slots: [Slot?] = []
  private var clocks: [Clock] = []
  private var slotOfID: [KeyPairingID: Int] = [:]
  private var table: [UInt64: Entry] = [:]
  private var negative: [UInt64: Int64] = [:]
  private var negativeOrder: [UInt64] = []
  private var negativeNext = 0
  private var budget: Int64
  private var budgetTime: Int64?

  private static var maxClock: Int64 { Int64(UInt32.max) }

  public init(configuration: Configuration = Configuration()) {
    self.configuration = configuration
    budget = configuration.searchOperationsPerSecond * configuration.searchBurstSeconds
  }

  /// The pairings' identifiers.
  public var pairingIDs: [KeyPairingID] { slots.compactMap { $0?.pairing.id } }

  /// Adds a pairing, or replaces the one with its identifier. The negative cache is cleared: an
  /// EID unknown before may be this pairing's.
  public mutating func add(_ pairing: EIDPairing) {
    remove(id: pairing.id)
    let slot = Slot(pairing: pairing)
    let clock = Clock(
      id: pairing.id, k: Int64(pairing.rotationExponent.rawValue), offset: pairing.clockOffset,
      heardWindow: pairing.heardWindow.map(Int64.init))
    if let free = slots.firstIndex(where: { $0 == nil }) {
      slots[free] = slot
      clocks[free] = clock
      slotOfID[pairing.id] = free
    } else {
      slots.append(slot)
      clocks.append(clock)
      slotOfID[pairing.id] = slots.count - 1
    }
    negative.removeAll(keepingCapacity: true)
    negativeOrder.removeAll(keepingCapacity: true)
    negativeNext = 0
  }

  /// Removes a pairing and its cached EIDs and temporary keys.
  public mutating func remove(id: KeyPairingID) {
    guard let index = slotOfID.removeValue(forKey: id), let slot = slots[index] else { return }
    for eid in slot.cachedWindows.values { table[eid] = nil }
    slots[index] = nil
  }

  /// Where a pairing's clock stands now, to be stored.
  public func tracking(of id: KeyPairingID) -> Tracking? {
    guard let index = slotOfID[id] else { return nil }
    let clock = clocks[index]
    return Tracking(clockOffset: clock.offset, heardWindow: clock.heardWindow.map { UInt32($0) })
  }

  /// The number of entries in the table of expected EIDs (at most three per pairing).
  public var tableCount: Int { table.count }

  // MARK: Resolving

  /// Resolves an EID heard at `boxSeconds` (the box's clock, seconds; the same clock the
  /// pairings' offsets are from).
  public mutating func resolve(eid: UInt64, atBoxSeconds t: Int64) -> EIDResolution {
    statistics.lookups += 1
    refillBudget(at: t)
    if let entry = table[eid] {
      statistics.cacheHits += 1
      let clock = clocks[entry.slot]
      guard within(window: entry.window, k: clock.k, expected: Self.expected(t, clock.offset)) else {
        statistics.unknown += 1
        return .unknown(.outsideTolerance)
      }
      return accept(slot: entry.slot, window: entry.window, at: t)
    }
    if let searched = negative[eid], case let (age, overflow) = t.subtractingReportingOverflow(searched),
      !overflow, age >= 0, age < configuration.negativeCacheSeconds
    {
      statistics.negativeHits += 1
      statistics.unknown += 1
      return .unknown(.recentlyUnknown)
    }
    guard budget > 0 else {
      statistics.searchesDeferred += 1
      statistics.unknown += 1
      return .unknown(.searchDeferred)
    }
    statistics.searches += 1
    let before = statistics.blockEncryptions + statistics.keyExpansions
    defer { budget -= Int64(statistics.blockEncryptions + statistics.keyExpansions - before) }
    for index in slots.indices where slots[index] != nil {
      guard let window = search(eid: eid, slot: index, at: t) else { continue }
      return accept(slot: index, window: window, at: t)
    }
    remember(unknown: eid, at: t)
    statistics.unknown += 1
    return .unknown(.notPaired)
  }

  /// Decrypts an encrypted TLM from a resolved beacon with its identity key and its clock as
  /// tracked: the current window, then the one before and after (the beacon may change windows
  /// between its EID and its TLM). The 12 plain TLM bytes, or nil when none verifies.
  public mutating func openTLM(_ frame: EncryptedTLM, of id: KeyPairingID, atBoxSeconds t: Int64) -> [UInt8]?
  {
    guard let index = slotOfID[id], let slot = slots[index] else { return nil }
    let k = clocks[index].k
    let window = Self.expected(t, clocks[index].offset) >> k
    for candidate in [window, window - 1, window + 1] {
      let clock = candidate << k
      guard clock >= 0, clock <= Self.maxClock else { continue }
      statistics.blockEncryptions += 2 + 2 * ((frame.ciphertext.count + 15) / 16)
      statistics.keyExpansions += 1
      if let tlm = frame.open(
        identityKey: slot.pairing.identityKey, rotationExponent: slot.pairing.rotationExponent,
        clock: UInt32(clock))
      {
        return tlm
      }
    }
    return nil
  }

  /// The most AES operations (block encryptions and key expansions) one pairing costs a search:
  /// at most ⌊2T / 2^K⌋ + 2 windows, one block each, and at most ⌊2T / 65,536⌋ + 2 temporary
  /// keys, one block and one key expansion each. A search over N pairings costs at most N times
  /// this. T = 86,400 s, K = 10: 170 + 2 × 4 = 178.
  public static func searchOperations(tolerance: Int64, rotationExponent k: RotationExponent) -> Int64 {
    let span = 2 * max(0, tolerance)
    return (span >> Int64(k.rawValue)) + 2 + 2 * (span / EddystoneEID.temporaryKeySeconds + 2)
  }

  // MARK: Internals

  /// The beacon's expected clock, saturated at 2^40 either side of zero whatever the box's time
  /// and a stored offset are, so that adding the tolerance never overflows (a clock that far out
  /// is outside every window anyway).
  private static func expected(_ t: Int64, _ offset: Int64) -> Int64 {
    let (sum, overflow) = t.addingReportingOverflow(offset)
    if overflow { return offset > 0 ? 1 << 40 : -(1 << 40) }
    return min(max(sum, -(1 << 40)), 1 << 40)
  }

  private func within(window: Int64, k: Int64, expected: Int64) -> Bool {
    let start = window << k
    let end = ((window + 1) << k) - 1
    return start <= expected + configuration.tolerance && end >= expected - configuration.tolerance
  }

  /// The window of `slot`'s beacon whose EID this is, within the tolerance; nil if none. From the
  /// expected window outward, so a beacon that drifted a little is found first.
  private mutating func search(eid: UInt64, slot index: Int, at t: Int64) -> Int64? {
    guard let slot = slots[index] else { return nil }
    let k = clocks[index].k
    let expected = Self.expected(t, clocks[index].offset)
    let low = max(0, expected - configuration.tolerance)
    let high = min(Self.maxClock, expected + configuration.tolerance)
    guard low <= high else { return nil }
    let first = low >> k
    let last = high >> k
    let center = min(max(expected, 0), Self.maxClock) >> k
    var keys: [Int64: AES128Key] = slot.temporaryKeys
    var step: Int64 = 0
    while true {
      let above = center + step
      let below = center - step - 1
      let aboveIn = above <= last
      let belowIn = below >= first
      if !aboveIn && !belowIn { break }
      for side in 0..<2 {
        let window = side == 0 ? above : below
        guard window >= first && window <= last else { continue }
        if compute(window: window, k: k, slot: slot, keys: &keys) == eid {
          // Kept for the table's refresh in `accept`, which drops those it does not need.
          slots[index]?.temporaryKeys = keys
          return window
        }
      }
      step += 1
    }
    return nil
  }

  /// The EID of a window, with the temporary key from `keys` or computed into it.
  private mutating func compute(
    window: Int64, k: Int64, slot: Slot, keys: inout [Int64: AES128Key]
  ) -> UInt64 {
    let clock = UInt32(window << k)
    let keyIndex = Int64(clock >> 16)
    let temporaryKey: AES128Key
    if let cached = keys[keyIndex] {
      temporaryKey = cached
    } else {
      temporaryKey = EddystoneEID.temporaryKey(identityKey: slot.pairing.identityKey, clock: clock)
      statistics.blockEncryptions += 1
      statistics.keyExpansions += 1
      keys[keyIndex] = temporaryKey
    }
    statistics.blockEncryptions += 1
    return EddystoneEID.eid(
      temporaryKey: temporaryKey, rotationExponent: slot.pairing.rotationExponent, clock: clock)
  }

  /// A found window: refused as a replay when older than the newest heard; otherwise the clock is
  /// tracked and the table holds the previous, current and next windows' EIDs.
  private mutating func accept(slot index: Int, window: Int64, at t: Int64) -> EIDResolution {
    let clock = clocks[index]
    if let heard = clock.heardWindow, window < heard {
      statistics.replaysRefused += 1
      return .replay(clock.id, window: UInt32(window), heardWindow: UInt32(heard))
    }
    statistics.resolved += 1
    // The smallest move of the offset that puts the expected clock inside the window heard.
    let start = window << clock.k
    let end = ((window + 1) << clock.k) - 1
    let expected = Self.expected(t, clock.offset)
    if expected < start {
      clocks[index].offset = start &- t
    } else if expected > end {
      clocks[index].offset = end &- t
    }
    clocks[index].heardWindow = window
    if clock.tableCenter != window { refreshTable(slot: index, around: window) }
    return .resolved(clock.id, window: UInt32(window))
  }

  /// Puts the previous, current and next windows' EIDs in the table, computing only those not
  /// there yet, and keeps only their temporary keys.
  private mutating func refreshTable(slot index: Int, around window: Int64) {
    guard var slot = slots[index] else { return }
    slots[index] = nil  // the slot's dictionaries are mutated uniquely, not copied
    let k = clocks[index].k
    let wanted = [window - 1, window, window + 1].filter { $0 >= 0 && ($0 << k) <= Self.maxClock }
    for (cached, eid) in slot.cachedWindows where !wanted.contains(cached) {
      table[eid] = nil
      slot.cachedWindows[cached] = nil
    }
    var keys = slot.temporaryKeys
    slot.temporaryKeys = [:]
    for missing in wanted where slot.cachedWindows[missing] == nil {
      let eid = compute(window: missing, k: k, slot: slot, keys: &keys)
      slot.cachedWindows[missing] = eid
      table[eid] = Entry(slot: index, window: missing)
    }
    let keyIndices = wanted.map { ($0 << k) >> 16 }
    slot.temporaryKeys = keys.filter { keyIndices.contains($0.key) }
    clocks[index].tableCenter = window
    slots[index] = slot
  }

  private mutating func remember(unknown eid: UInt64, at t: Int64) {
    guard configuration.negativeCacheCapacity > 0 else { return }
    if negative.updateValue(t, forKey: eid) != nil { return }
    if negativeOrder.count < configuration.negativeCacheCapacity {
      negativeOrder.append(eid)
    } else {
      negative[negativeOrder[negativeNext]] = nil
      negativeOrder[negativeNext] = eid
      negativeNext = (negativeNext + 1) % negativeOrder.count
    }
  }

  private mutating func refillBudget(at t: Int64) {
    defer { budgetTime = max(budgetTime ?? t, t) }
    guard let last = budgetTime, t > last else { return }
    let capacity = configuration.searchOperationsPerSecond * configuration.searchBurstSeconds
    let (difference, overflow) = t.subtractingReportingOverflow(last)
    let elapsed =
      overflow ? configuration.searchBurstSeconds : min(difference, configuration.searchBurstSeconds)
    budget = min(capacity, budget + elapsed * configuration.searchOperationsPerSecond)
  }
}
