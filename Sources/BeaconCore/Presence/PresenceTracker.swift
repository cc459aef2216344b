#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Presence settings; every number is a configuration key.
public struct PresenceSettings: Hashable, Sendable {
  /// A beacon exits when it has not been seen for this long (docs/DESIGN.md, Behaviour: 10 s)…
  /// Backends whose cadence is slower (BlueZ active discovery, about one report per 10.24 s window) use a larger
  /// value or rely on their own `lost` events.
  public var exitTimeout: Double = 10
  /// …and when, given the beacon's own advertising interval and packet loss as observed, the
  /// chance that it is still there but every packet since was lost is below this. A fixed 10 s
  /// timeout flaps a 1 Hz beacon losing 40% of its packets about once an hour (0.4^10 per
  /// second); this keeps such a beacon in range (it exits after about 20 s of silence instead).
  public var exitMissProbability: Double = 1e-7
  /// Never later than this after the last sighting, however lossy the beacon looked.
  public var exitTimeoutMax: Double = 60
  public var rssi = RSSISettings()
  public var distance = DistanceModel()

  public init() {}
}

/// One beacon in range, as presence sees it.
public struct TrackedBeacon: Hashable, Sendable {
  public var id: BeaconID
  /// The address it was last heard from.
  public var address: BluetoothAddress
  public var firstSeen: Timestamp
  public var lastSeen: Timestamp
  public var sightings: Int
  /// The last known raw RSSI, dBm.
  public var lastRSSI: Int?
  /// The filtered RSSI, dBm.
  public var smoothedRSSI: Double?
  /// The beacon's calibrated power at 1 m, from its frame.
  public var powerAt1m: Int?
  public var distance: Double?
  public var proximity: Proximity
}

/// Why a beacon left.
public enum ExitReason: String, Hashable, Sendable {
  /// Not seen for `exitTimeout`.
  case timeout
  /// The backend reported the device gone.
  case lost
}

public enum PresenceEvent: Hashable, Sendable {
  case entered(TrackedBeacon)
  case exited(TrackedBeacon, ExitReason)
}

/// Keeps the list of beacons in range: smoothed RSSI, distance, and enter/exit events.
///
/// A pure state machine: the caller passes the time of every call, so it runs unchanged under
/// a virtual clock.
///
/// `observe` runs for every advertisement (thousands a second with a few hundred beacons in
/// range), so its per-sighting work is kept constant and allocation-free (issue #8): entries live
/// in a contiguous array and are updated in place through an id → index table keyed by a 64-bit
/// identity key (`BeaconIndex`: a few multiplications per sighting, no `Hasher`), the RSSI filter is a concrete enum rather than an existential, the exit delay's
/// inputs are kept up to date incrementally by `SightingHistory` instead of being recomputed from
/// 64 samples, and the delay itself is computed only when a deadline is asked for.
public struct PresenceTracker: Sendable {
  public var settings: PresenceSettings {
    didSet {
      let rule = ExitRule(settings)
      if settings.distance != oldValue.distance {
        // Values not derived yet belong to the model in force at the beacon's last sighting.
        for i in entries.indices { entries[i].settle(oldValue.distance) }
      }
      guard rule != exitRule else { return }
      // A delay not computed yet belongs to the rule in force at the beacon's last sighting.
      for i in entries.indices where entries[i].exitAfter == nil {
        entries[i].exitAfter = exitRule.delay(entries[i].history)
      }
      exitRule = rule
    }
  }

  private struct Entry: Sendable {
    /// The beacon, its smoothed RSSI, distance and proximity as of `derivedAt` (see there).
    var beacon: TrackedBeacon
    /// `beacon.id`'s key in `places`.
    var key: UInt64
    var filter: PresenceRSSIFilter
    /// Recent sighting times, for the interval and loss estimate.
    var history: SightingHistory
    /// How long after `lastSeen` the beacon exits; nil until asked for after a sighting.
    ///
    /// Computed when a deadline is needed (about once a second) rather than on every sighting
    /// (ten a second per beacon): the value depends only on `history` and the exit settings,
    /// which `settings`' observer pins before they change.
    var exitAfter: Double?
    /// The time of the last sighting when `beacon`'s smoothed RSSI, distance and proximity have
    /// not been derived for it yet; nil when they are current.
    ///
    /// They are derived when the beacon is read (an event, `inRange`, `beacon(_:)`), not on every
    /// sighting: the distance curve is a `pow`, and most sightings are of beacons nobody reads
    /// before their next one. They depend only on the filter (which changes only with a
    /// sighting, which sets this anew), `powerAt1m` (likewise) and the distance model, which
    /// `settings`' observer pins before it changes; `derive` gives what the sighting would have.
    var derivedAt: Timestamp?
    /// The stamp of this entry's element in force in `deadlines`: 0 while its deadline is not
    /// queued (it is then in `unqueued`).
    var stamp: UInt64 = 0
    /// The deadline of that element: never later than the entry's own (`deadline`), which a
    /// sighting usually moves later without touching the heap (see `deadlines`).
    var queuedDeadline = 0.0

    /// When the beacon exits; `exitAfter` must be known.
    var deadline: Double { (beacon.lastSeen + exitAfter!).seconds }

    func exitAfter(_ rule: ExitRule) -> Double { exitAfter ?? rule.delay(history) }

    /// The beacon with its derived values current, under `model`.
    func tracked(_ model: DistanceModel) -> TrackedBeacon {
      guard let time = derivedAt else { return beacon }
      var beacon = beacon
      Self.derive(&beacon, filter: filter, at: time, distance: model)
      return beacon
    }

    /// Brings the derived values up to date in place, under `model`.
    mutating func settle(_ model: DistanceModel) {
      guard let time = derivedAt else { return }
      Self.derive(&beacon, filter: filter, at: time, distance: model)
      derivedAt = nil
    }

    /// A further sighting, applied in place. Returns whether the entry's deadline was queued
    /// (it has moved, and must be queued again).
    mutating func sighted(
      _ frame: BeaconFrame, from address: BluetoothAddress, rssi: Int?, at time: Timestamp
    ) -> Bool {
      let wasQueued = exitAfter != nil
      beacon.address = address
      beacon.lastSeen = max(beacon.lastSeen, time)
      beacon.sightings += 1
      beacon.powerAt1m = frame.powerAt1m ?? beacon.powerAt1m
      history.append(time)
      exitAfter = nil
      if let rssi {
        beacon.lastRSSI = rssi
        filter.add(Double(rssi), at: time)
      }
      derivedAt = time
      return wasQueued
    }

    /// Smoothed RSSI, distance and proximity after a sighting at `time`.
    static func derive(
      _ beacon: inout TrackedBeacon, filter: PresenceRSSIFilter, at time: Timestamp,
      distance model: DistanceModel
    ) {
      beacon.smoothedRSSI = filter.value(at: time)
      if let smoothed = beacon.smoothedRSSI, let power = beacon.powerAt1m {
        beacon.distance = model.distance(rssi: smoothed, powerAt1m: power)
      } else {
        beacon.distance = nil
      }
      beacon.proximity = model.proximity(distance: beacon.distance)
    }
  }

  /// The beacons in range, in no particular order (every reader sorts or takes a minimum).
  private var entries: [Entry] = []
  /// Where each beacon's entry is in `entries`: a table keyed by a 64-bit identity key, no
  /// `Hasher` per sighting (`BeaconIndex`).
  private var places = BeaconIndex()
  /// The beacons last heard from each address, so that `lost` need not scan every entry (a flood
  /// of random addresses made that quadratic).
  private var idsByAddress: [BluetoothAddress: Set<BeaconID>] = [:]
  /// When a flood of beacons has come and gone: then the three tables above are rebuilt to fit
  /// (a Swift array or dictionary, and `BeaconIndex`, keep the capacity of their peak).
  private var shrink = PeakShrink()
  /// The exit settings, with the logarithm every exit delay needs taken once.
  private var exitRule: ExitRule
  /// Every entry's exit deadline, earliest first (elements name entries by index), so that
  /// `nextDeadline` and `expire` cost O(log n) per beacon due rather than a scan of every beacon
  /// (issue 28). An element is in force while its entry's `stamp` is the element's.
  ///
  /// Each entry's element in force holds a deadline no later than the entry's own. A sighting
  /// almost always moves a deadline later, and then the element stays as it is (a lower bound):
  /// it is brought up to date only when it reaches the top. A deadline that moved earlier (the
  /// loss estimate improved) gets a new element at once. The earliest element is then exact
  /// when it is an entry's own deadline, and no entry's deadline is earlier.
  private var deadlines = DeadlineHeap<Int>()
  /// Entries sighted (or entered) since their deadline was last queued: their deadline moved.
  /// A sighting only appends its index here (once until the next query), so the per-sighting
  /// work stays constant; the delay is computed, and the heap touched, when a deadline is asked
  /// for. Indices stay valid because every removal queues these first.
  private var unqueued: [Int] = []

  public init(settings: PresenceSettings = PresenceSettings()) {
    self.settings = settings
    exitRule = ExitRule(settings)
  }

  /// The beacons in range, strongest first (then by identity, so the order is stable).
  /// Whether any beacon is tracked: then every sighting may move `nextDeadline`.
  public var isTracking: Bool { !entries.isEmpty }

  public var inRange: [TrackedBeacon] {
    entries.map { $0.tracked(settings.distance) }.sorted { a, b in
      switch (a.smoothedRSSI, b.smoothedRSSI) {
      case (let x?, let y?) where x != y: return x > y
      case (.some, nil): return true
      case (nil, .some): return false
      default: return a.id < b.id
      }
    }
  }

  public func beacon(_ id: BeaconID) -> TrackedBeacon? {
    position(of: id).map { entries[$0].tracked(settings.distance) }
  }

  /// Where `id`'s entry is in `entries`.
  @inline(__always)
  private func position(of id: BeaconID) -> Int? {
    position(of: id, key: id.indexKey(seed: places.seed))
  }

  @inline(__always)
  private func position(of id: BeaconID, key: UInt64) -> Int? {
    entries.withUnsafeBufferPointer { entries in
      places.find(key) { entries[$0].beacon.id == id }
    }
  }

  /// Records a sighting of a beacon frame. A sighting without RSSI still counts as presence.
  public mutating func observe(_ frame: BeaconFrame, from ad: Advertisement, at time: Timestamp)
    -> [PresenceEvent]
  {
    guard let id = frame.beaconID else { return [] }
    let (index, entered) = record(frame, id: id, from: ad, at: time)
    // The common case, a beacon already in range, returns an empty literal: no allocation.
    return entered ? [.entered(beacon(at: index))] : []
  }

  /// `observe` for a frame whose `beaconID` is `id`. Returns where the beacon's entry is (valid
  /// until the next mutation), for `BeaconPipeline`, which would otherwise look it up again, and
  /// whether the beacon entered.
  mutating func record(_ frame: BeaconFrame, id: BeaconID, from ad: Advertisement, at time: Timestamp)
    -> (index: Int, entered: Bool)
  {
    record(frame, id: id, address: ad.address, rssi: ad.rssi, at: time)
  }

  /// `record` with what it reads of the advertisement: its address and its RSSI.
  @inline(__always)
  mutating func record(
    _ frame: BeaconFrame, id: BeaconID, address: BluetoothAddress, rssi reported: Int?, at time: Timestamp
  ) -> (index: Int, entered: Bool) {
    let rssi = reported.flatMap { RSSI.isKnown($0) ? $0 : nil }
    let key = id.indexKey(seed: places.seed)
    if let index = position(of: id, key: key) {
      if entries[index].beacon.address != address { moved(index, to: address) }
      if entries[index].sighted(frame, from: address, rssi: rssi, at: time) { requeue(index) }
      return (index, false)
    }
    return (enter(frame, id: id, key: key, from: address, rssi: rssi, at: time), true)
  }

  /// The beacon at `index` is now heard from `address`. Out of line, like `enter`: the sighting
  /// of a beacon already in range from the same address (nearly every sighting) is then a
  /// smaller function, with fewer registers to save and less stack to set up.
  @inline(never)
  private mutating func moved(_ index: Int, to address: BluetoothAddress) {
    unindex(entries[index].beacon)
    idsByAddress[address, default: []].insert(entries[index].beacon.id)
  }

  /// The entry at `index` was sighted since its deadline was queued. Out of line: it runs once
  /// per beacon between two deadline queries, not once per sighting.
  @inline(never)
  private mutating func requeue(_ index: Int) { unqueued.append(index) }

  /// A beacon not in range enters; returns its entry's index.
  @inline(never)
  private mutating func enter(
    _ frame: BeaconFrame, id: BeaconID, key: UInt64, from address: BluetoothAddress, rssi: Int?,
    at time: Timestamp
  ) -> Int {
    var filter = PresenceRSSIFilter(settings.rssi.filter, settings: settings.rssi)
    if let rssi { filter.add(Double(rssi), at: time) }
    var entry = Entry(
      beacon: TrackedBeacon(
        id: id, address: address, firstSeen: time, lastSeen: time, sightings: 1, lastRSSI: rssi,
        smoothedRSSI: nil, powerAt1m: frame.powerAt1m, distance: nil, proximity: .unknown),
      key: key, filter: filter, history: SightingHistory(time), exitAfter: nil, derivedAt: time)
    entry.settle(settings.distance)
    entries.append(entry)
    places.insert(key, index: entries.count - 1)
    idsByAddress[address, default: []].insert(id)
    unqueued.append(entries.count - 1)
    return entries.count - 1
  }

  /// The beacons last heard from `address`, each heard at `since` or later, in identity order:
  /// what a TLM or URL frame from that address is linked to.
  func ids(heardFrom address: BluetoothAddress, since: Timestamp) -> [BeaconID] {
    guard let ids = idsByAddress[address] else { return [] }
    return ids.filter { id in position(of: id).map { entries[$0].beacon.lastSeen >= since } ?? false }
      .sorted()
  }

  /// Packet loss as the exit rule estimates it: the share of the packets expected from the
  /// beacon's advertising interval (its shortest recent gap) over its recent sightings that did
  /// not arrive. nil for a beacon not in range or with fewer than 3 sightings.
  public func packetLoss(_ id: BeaconID) -> Double? {
    guard let index = position(of: id) else { return nil }
    let history = entries[index].history
    guard history.count >= 3, history.interval.isFinite, history.interval > 0 else { return nil }
    let expected = history.span / history.interval + 1
    return max(0, expected - Double(history.count)) / expected
  }

  /// The beacon at an index `record` returned.
  func beacon(at index: Int) -> TrackedBeacon { entries[index].tracked(settings.distance) }

  /// The backend reports a device gone: every beacon last heard from that address exits.
  public mutating func lost(_ address: BluetoothAddress, at time: Timestamp) -> [PresenceEvent] {
    queueDeadlines()
    let ids = idsByAddress.removeValue(forKey: address) ?? []
    let gone = ids.compactMap { beacon($0) }.sorted { $0.id < $1.id }
    for beacon in gone { remove(beacon.id) }
    return gone.map { .exited($0, .lost) }
  }

  /// Exits every beacon not seen for `exitTimeout`, as of `time`.
  ///
  /// Only the beacons whose deadline is due are visited (from `deadlines`), each judged by the
  /// same test as ever (`time - lastSeen >= exitAfter`): a deadline is a sum, rounded, and the
  /// test a difference, so elements within a few ulps after `time` are judged too.
  public mutating func expire(at time: Timestamp) -> [PresenceEvent] {
    queueDeadlines()
    var due: [Int] = []
    var notYet: [DeadlineHeap<Int>.Element] = []
    while let top = deadlines.top {
      guard isInForce(top) else {
        deadlines.pop()
        continue
      }
      guard top.deadline <= time.seconds || Self.withinRounding(top.deadline, time.seconds) else { break }
      deadlines.pop()
      let entry = entries[top.tag]
      if time - entry.beacon.lastSeen >= entry.exitAfter! {
        due.append(top.tag)
      } else if top.deadline != entry.deadline {
        queue(top.tag)
      } else {
        notYet.append(top)
      }
    }
    for element in notYet { deadlines.push(element) }
    guard !due.isEmpty else { return [] }
    let gone = due.map { entries[$0].tracked(settings.distance) }
      .sorted { ($0.lastSeen, $0.id) < ($1.lastSeen, $1.id) }
    for beacon in gone {
      remove(beacon.id)
      unindex(beacon)
    }
    return gone.map { .exited($0, .timeout) }
  }

  /// Whether `deadline`, just after `time`, is close enough that `time - lastSeen >= exitAfter`
  /// may hold for it though `lastSeen + exitAfter > time` (each rounds once, to at most half an
  /// ulp of the larger magnitude).
  private static func withinRounding(_ deadline: Double, _ time: Double) -> Bool {
    deadline - time <= 8 * max(deadline.magnitude, time.magnitude).ulp
  }

  /// When the next beacon would time out. Mutating: it queues the deadlines sightings moved and
  /// drops heap elements no longer in force.
  public var nextDeadline: Timestamp? {
    mutating get {
      queueDeadlines()
      while let top = deadlines.top {
        guard isInForce(top) else {
          deadlines.pop()
          continue
        }
        guard top.deadline == entries[top.tag].deadline else {
          deadlines.pop()
          queue(top.tag)
          continue
        }
        return Timestamp(seconds: top.deadline)
      }
      return nil
    }
  }

  /// Whether a heap element is its entry's deadline in force.
  @inline(__always)
  private func isInForce(_ element: DeadlineHeap<Int>.Element) -> Bool {
    element.tag < entries.count && entries[element.tag].stamp == element.stamp
  }

  /// Computes the exit delay of every entry in `unqueued` and queues its deadline.
  private mutating func queueDeadlines() {
    guard !unqueued.isEmpty else { return }
    for index in unqueued {
      if entries[index].exitAfter == nil { entries[index].exitAfter = exitRule.delay(entries[index].history) }
      // Later (the usual case): the element in force stays, a lower bound.
      if entries[index].stamp == 0 || entries[index].deadline < entries[index].queuedDeadline { queue(index) }
    }
    unqueued.removeAll(keepingCapacity: true)
    if deadlines.needsRebuild(live: entries.count) { rebuildDeadlines() }
  }

  /// Gives the entry at `index` an element with its own deadline, in force from now on.
  private mutating func queue(_ index: Int) {
    let deadline = entries[index].deadline
    entries[index].stamp = deadlines.push(deadline, index)
    entries[index].queuedDeadline = deadline
  }

  /// Refills `deadlines` with one element per entry; every deadline must be queued.
  private mutating func rebuildDeadlines() {
    let stamps = deadlines.rebuild(entries.indices.map { (entries[$0].deadline, $0) })
    for (index, stamp) in zip(entries.indices, stamps) {
      entries[index].stamp = stamp
      entries[index].queuedDeadline = entries[index].deadline
    }
  }

  /// Removes a beacon's entry (not its address index), moving the last entry into its place.
  private mutating func remove(_ id: BeaconID) {
    queueDeadlines()
    guard let position = position(of: id) else { return }
    places.remove(entries[position].key, index: position)
    let last = entries.count - 1
    if position != last {
      entries.swapAt(position, last)
      places.move(entries[position].key, from: last, to: position)
      // Its element in force names `last`: one naming its new place replaces it.
      queue(position)
    }
    entries.removeLast()
    if shrink.shouldRelease(tracked: entries.count) {
      compact()
    } else if deadlines.needsRebuild(live: entries.count) {
      rebuildDeadlines()
    }
  }

  /// Rebuilds `entries`, `places` and `idsByAddress` with capacities that fit what is tracked.
  private mutating func compact() {
    var fitted: [Entry] = []
    fitted.reserveCapacity(entries.count)
    fitted.append(contentsOf: entries)
    entries = fitted
    places = places.rebuilt(entries.map(\.key))
    unqueued = []
    rebuildDeadlines()
    idsByAddress = Dictionary(idsByAddress.lazy.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
  }

  /// The capacity of the table that finds a beacon's entry (tests: it shrinks after a flood).
  var indexCapacity: Int { places.capacity }

  /// How many elements the deadline heap holds (tests: bounded by the beacons in range).
  var deadlineHeapCount: Int { deadlines.count }

  private mutating func unindex(_ beacon: TrackedBeacon) {
    guard var ids = idsByAddress.removeValue(forKey: beacon.address) else { return }
    ids.remove(beacon.id)
    if !ids.isEmpty { idsByAddress[beacon.address] = ids }
  }
}

/// The adaptive-exit rule (docs/ARCHITECTURE.md), with `log(exitMissProbability)` taken once
/// per settings change rather than once per sighting.
///
/// The advertising interval is the shortest recent gap (two packets in a row get through often
/// enough); the loss rate is the share of expected packets that did not arrive. Silence of `t`
/// seconds then has probability `loss^(t/interval)` of being bad luck; the beacon exits once that
/// is below `exitMissProbability`.
struct ExitRule: Equatable, Sendable {
  var exitTimeout: Double
  var exitTimeoutMax: Double
  var logMissProbability: Double

  init(_ settings: PresenceSettings) {
    exitTimeout = settings.exitTimeout
    exitTimeoutMax = settings.exitTimeoutMax
    logMissProbability = log(settings.exitMissProbability)
  }

  /// Bit for bit, so that a rule is only ever replaced by one that computes the same delays.
  static func == (a: ExitRule, b: ExitRule) -> Bool {
    a.exitTimeout.bitPattern == b.exitTimeout.bitPattern
      && a.exitTimeoutMax.bitPattern == b.exitTimeoutMax.bitPattern
      && a.logMissProbability.bitPattern == b.logMissProbability.bitPattern
  }

  func delay(_ history: SightingHistory) -> Double {
    guard history.count >= 3 else { return exitTimeout }
    return delay(count: history.count, interval: history.interval, span: history.span)
  }

  /// The delay after `count` sightings `span` seconds apart (newest minus oldest), the shortest
  /// gap between consecutive ones being `interval` (infinite when no gap counts).
  func delay(count: Int, interval: Double, span: Double) -> Double {
    guard count >= 3, interval.isFinite else { return exitTimeout }
    let expected = span / interval + 1
    // A Beta(4, 4) prior keeps a young estimate near 50% loss until the beacon has shown
    // otherwise; 0.05 covers the estimate's noise.
    let missed = max(0, expected - Double(count))
    let loss = min(0.95, (missed + 4) / (expected + 8) + 0.05)
    let silence = interval * logMissProbability / log(loss)
    return min(max(exitTimeout, silence), max(exitTimeout, exitTimeoutMax))
  }
}

/// The last `capacity` sighting times of a beacon, in arrival order, with what the exit delay
/// needs from them kept up to date as sightings arrive.
///
/// A ring buffer, so that the oldest time is dropped without shifting the others; the shortest
/// gap is maintained with a count of the gaps equal to it, so the window is rescanned only when
/// the last gap at the minimum leaves it (about once per `capacity` sightings for a jittery
/// beacon, never for a perfectly regular one). Every value is the one the straightforward scan
/// would compute (a minimum, and a difference of two stored times), so the exit delay is
/// bit-for-bit the same.
struct SightingHistory: Sendable {
  static let capacity = 64
  /// Gaps this short or shorter are the same packet heard twice (or several receivers), not
  /// the advertising interval.
  static let minimumGap = 0.005

  /// The times, seconds; once full, `oldest` is where the ring starts.
  private var times: [Double]
  private var oldest = 0
  /// The shortest gap longer than `minimumGap` between consecutive times; infinity when none is.
  private(set) var interval = Double.infinity
  /// How many gaps in the window equal `interval`.
  private var atInterval = 0

  init(_ first: Timestamp) {
    times = [first.seconds]
    times.reserveCapacity(Self.capacity)
  }

  var count: Int { times.count }

  /// Newest minus oldest.
  var span: Double { times[newestIndex] - times[oldest] }

  private var newestIndex: Int { oldest == 0 ? times.count - 1 : oldest - 1 }

  /// The times, oldest first.
  var recent: [Timestamp] {
    (0..<times.count).map { Timestamp(seconds: times[(oldest + $0) % times.count]) }
  }

  mutating func append(_ time: Timestamp) {
    let t = time.seconds
    if times.count < Self.capacity {
      // Not full yet: the ring has not turned, so the newest time is the last.
      let previous = times[times.count - 1]
      times.append(t)
      consider(t - previous)
    } else {
      // Full (the steady state): the newest time replaces the oldest, in one pass over the
      // buffer (no bounds check or uniqueness check per access).
      let oldest = self.oldest
      let next = oldest + 1 == Self.capacity ? 0 : oldest + 1
      let newest = oldest == 0 ? Self.capacity - 1 : oldest - 1
      let (previous, evicted) = times.withUnsafeMutableBufferPointer { times in
        let gaps = (times[newest], times[next] - times[oldest])
        times[oldest] = t
        return gaps
      }
      if evicted > Self.minimumGap, evicted == interval { atInterval -= 1 }
      self.oldest = next
      consider(t - previous)
    }
    // With no gap left at the old minimum every remaining gap is longer than it, so a new gap
    // at or below it is the new minimum; otherwise the window is rescanned.
    if atInterval == 0 && interval.isFinite { rescan() }
  }

  /// Counts a gap toward the shortest one and how many gaps are at it.
  private mutating func consider(_ gap: Double) {
    guard gap > Self.minimumGap else { return }
    if gap < interval {
      interval = gap
      atInterval = 1
    } else if gap == interval {
      atInterval += 1
    }
  }

  private mutating func rescan() {
    interval = .infinity
    atInterval = 0
    var a = times[oldest]
    for k in 1..<times.count {
      let b = times[(oldest + k) % times.count]
      consider(b - a)
      a = b
    }
  }
}
