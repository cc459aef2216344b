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

    /// When set, the budget refills by this many operations per lookup, and not with time:
    /// `replay` counts its work by record, so a capture's timestamps (records far apart) cannot
    /// buy it search time. Clamped to 0...1,000,000,000.
    public var searchOperationsPerLookup: Int64? {
      didSet { searchOperationsPerLookup = searchOperationsPerLookup.map { min(max(0, $0), 1_000_000_000) } }
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
  struct Clock: Sendable {
    var id: KeyPairingID
    var k: Int64
    var offset: Int64
    var heardWindow: Int64?
    /// The window the table's three entries are around.
    var tableCenter: Int64?
    /// After the box's clock stepped (`clockStepped(by:)`): the offset as it was, searched too
    /// until the beacon is heard again, for an offset that was set against the clock as it
    /// now is (a pairing stored before a boot whose clock was wrong until NTP came).
    var unmovedOffset: Int64?
  }

  struct Slot: Sendable {
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

  public private(set) var configuration: Configuration
  // The search (EIDResolver+Search.swift) reads the slots and clocks and counts its AES
  // operations: they are internal, the table and the caches private.
  public internal(set) var statistics = EIDResolverStatistics()
  /// Parallel: a removed pairing leaves nil in `slots` (and its clock unused) for the next one.
  var slots: [Slot?] = []
  var clocks: [Clock] = []
  private var slotOfID: [KeyPairingID: Int] = [:]
  private var table: [UInt64: Entry] = [:]
  private var negative: [UInt64: Int64] = [:]
  /// EIDs a search run elsewhere found to be replays (`found`), answered as replays from here
  /// without another search; at most `replayedCapacity`, the oldest forgotten first.
  private var replayed: [UInt64: Entry] = [:]
  private var replayedOrder: [UInt64] = []
  static let replayedCapacity = 1_024
  private var negativeOrder: [UInt64] = []
  private var negativeNext = 0
  private var budget: Int64
  private var budgetTime: Int64?

  static var maxClock: Int64 { Int64(UInt32.max) }

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

  /// Takes `other`'s pairings and tolerance in place: a pairing both hold keeps this resolver's
  /// clock, heard window and table (what was heard since `other` was read from the store), one
  /// only `other` holds is added with `other`'s tracking, one `other` lacks is removed. Nothing
  /// heard is lost, since nothing is replaced.
  public mutating func reconcile(with other: EIDResolver) {
    configuration.tolerance = other.configuration.tolerance
    let wanted = Set(other.pairingIDs)
    for id in pairingIDs where !wanted.contains(id) { remove(id: id) }
    for index in other.slots.indices {
      guard let slot = other.slots[index], slotOfID[slot.pairing.id] == nil else { continue }
      let clock = other.clocks[index]
      add(
        EIDPairing(
          id: slot.pairing.id, identityKey: slot.pairing.identityKey,
          rotationExponent: slot.pairing.rotationExponent,
          clockOffset: clock.offset, heardWindow: clock.heardWindow.map { UInt32($0) }))
    }
  }

  /// Removes a pairing and its cached EIDs and temporary keys.
  public mutating func remove(id: KeyPairingID) {
    guard let index = slotOfID.removeValue(forKey: id), let slot = slots[index] else { return }
    for eid in slot.cachedWindows.values { table[eid] = nil }
    replayed = replayed.filter { $0.value.slot != index }
    replayedOrder.removeAll { replayed[$0] == nil }
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

  /// The box's clock stepped by `delta` seconds (NTP, GNSS, by hand), and box time follows it:
  /// every offset moves by -`delta`, so each beacon's expected clock goes on where it was, and
  /// the offset as it was is kept as a second guess that a search also tries (an offset set
  /// against the clock as it now is, which the step corrected, is right unmoved). A beacon heard
  /// again settles which.
  public mutating func clockStepped(by delta: Int64) {
    guard delta != 0 else { return }
    for index in clocks.indices where slots[index] != nil {
      let offset = clocks[index].offset
      clocks[index].unmovedOffset = clocks[index].unmovedOffset ?? offset
      let (moved, overflow) = offset.subtractingReportingOverflow(delta)
      clocks[index].offset = overflow ? offset : moved
      if clocks[index].unmovedOffset == clocks[index].offset { clocks[index].unmovedOffset = nil }
    }
    // An EID searched for against the old clock may be found against the new one.
    negative.removeAll(keepingCapacity: true)
    negativeOrder.removeAll(keepingCapacity: true)
    negativeNext = 0
  }

  /// Fills the table around the expected window at box seconds `t` of every pairing heard
  /// before (its tracking kept in the store across a restart) that has no table yet, so that its
  /// next EID resolves from the table at once, not after a search: a beacon the box already
  /// tracks is known from its first advertisement (a scanner may hear only that one before the
  /// beacon moves on). At most three EIDs and two temporary keys per such pairing.
  public mutating func primeTable(atBoxSeconds t: Int64) {
    for index in clocks.indices
    where slots[index] != nil && clocks[index].heardWindow != nil && clocks[index].tableCenter == nil {
      let clock = clocks[index]
      refreshTable(slot: index, around: min(max(Self.expected(t, clock.offset), 0), Self.maxClock) >> clock.k)
    }
  }

  // MARK: Resolving

  /// Resolves an EID heard at `boxSeconds` (the box's clock, seconds; the same clock the
  /// pairings' offsets are from). `searching` false answers an EID that needs a search with
  /// `.unknown(.searchNeeded)` at once, for its owner to search elsewhere (`search(for:)`).
  public mutating func resolve(eid: UInt64, atBoxSeconds t: Int64, searching: Bool = true) -> EIDResolution {
    statistics.lookups += 1
    refillBudget(at: t)
    if let entry = table[eid] {
      statistics.cacheHits += 1
      let clock = clocks[entry.slot]
      if !within(window: entry.window, k: clock.k, expected: Self.expected(t, clock.offset)) {
        guard let unmoved = clock.unmovedOffset,
          within(window: entry.window, k: clock.k, expected: Self.expected(t, unmoved))
        else {
          statistics.unknown += 1
          return .unknown(.outsideTolerance)
        }
        clocks[entry.slot].offset = unmoved
      }
      return accept(slot: entry.slot, window: entry.window, at: t)
    }
    if let entry = replayed[eid] {
      statistics.cacheHits += 1
      return accept(slot: entry.slot, window: entry.window, at: t)
    }
    if let searched = negative[eid], case let (age, overflow) = t.subtractingReportingOverflow(searched),
      !overflow, age >= 0, age < configuration.negativeCacheSeconds
    {
      statistics.negativeHits += 1
      statistics.unknown += 1
      return .unknown(.recentlyUnknown)
    }
    guard searching else {
      statistics.unknown += 1
      return .unknown(.searchNeeded)
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

  // MARK: Internals

  func slotIndex(of id: KeyPairingID) -> Int? { slotOfID[id] }

  mutating func acceptFound(eid: UInt64, slot index: Int, window: Int64, at t: Int64) -> EIDResolution {
    let resolution = accept(slot: index, window: window, at: t)
    if case .replay = resolution, replayed[eid] == nil {
      if replayedOrder.count >= Self.replayedCapacity { replayed[replayedOrder.removeFirst()] = nil }
      replayed[eid] = Entry(slot: index, window: window)
      replayedOrder.append(eid)
    }
    return resolution
  }

  mutating func rememberUnknown(_ eid: UInt64, at t: Int64) { remember(unknown: eid, at: t) }

  /// The beacon's expected clock, saturated at 2^40 either side of zero whatever the box's time
  /// and a stored offset are, so that adding the tolerance never overflows (a clock that far out
  /// is outside every window anyway).
  static func expected(_ t: Int64, _ offset: Int64) -> Int64 {
    let (sum, overflow) = t.addingReportingOverflow(offset)
    if overflow { return offset > 0 ? 1 << 40 : -(1 << 40) }
    return min(max(sum, -(1 << 40)), 1 << 40)
  }

  private func within(window: Int64, k: Int64, expected: Int64) -> Bool {
    let start = window << k
    let end = ((window + 1) << k) - 1
    return start <= expected + configuration.tolerance && end >= expected - configuration.tolerance
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
    clocks[index].unmovedOffset = nil
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

  /// Makes the budget refill by `operations` per lookup, not with time
  /// (`Configuration.searchOperationsPerLookup`).
  public mutating func chargeSearchesPerLookup(_ operations: Int64) {
    configuration.searchOperationsPerLookup = operations
  }

  private mutating func refillBudget(at t: Int64) {
    let capacity = configuration.searchOperationsPerSecond * configuration.searchBurstSeconds
    if let perLookup = configuration.searchOperationsPerLookup {
      budget = min(capacity, budget + perLookup)
      return
    }
    defer { budgetTime = max(budgetTime ?? t, t) }
    guard let last = budgetTime, t > last else { return }
    let (difference, overflow) = t.subtractingReportingOverflow(last)
    let elapsed =
      overflow ? configuration.searchBurstSeconds : min(difference, configuration.searchBurstSeconds)
    budget = min(capacity, budget + elapsed * configuration.searchOperationsPerSecond)
  }
}
