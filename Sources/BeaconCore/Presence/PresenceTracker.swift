#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Keeps the list of beacons in range: smoothed RSSI, distance, and enter/exit events.
///
/// A pure state machine: the caller passes the time of every call, so it runs unchanged under
/// a virtual clock.
///
/// `observe` runs for every advertisement (thousands a second with a few hundred beacons in
/// range), so its per-sighting work is kept constant and allocation-free: entries live
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

  struct Entry: Sendable {
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
  var entries: [Entry] = []
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
  var exitRule: ExitRule
  /// Every entry's exit deadline, earliest first (elements name entries by index), so that
  /// `nextDeadline` and `expire` cost O(log n) per beacon due rather than a scan of every beacon
  /// An element is in force while its entry's `stamp` is the element's.
  ///
  /// Each entry's element in force holds a deadline no later than the entry's own. A sighting
  /// almost always moves a deadline later, and then the element stays as it is (a lower bound):
  /// it is brought up to date only when it reaches the top. A deadline that moved earlier (the
  /// loss estimate improved) gets a new element at once. The earliest element is then exact
  /// when it is an entry's own deadline, and no entry's deadline is earlier.
  var deadlines = DeadlineHeap<Int>()
  /// Entries sighted (or entered) since their deadline was last queued: their deadline moved.
  /// A sighting only appends its index here (once until the next query), so the per-sighting
  /// work stays constant; the delay is computed, and the heap touched, when a deadline is asked
  /// for. Indices stay valid because every removal queues these first.
  var unqueued: [Int] = []
  /// Set when `record` hears a beacon in range from another address than its last sighting's,
  /// in `moved` (off the path of a sighting from the same address); cleared by the caller that
  /// acts on it (`BeaconPipeline`, for the clone rule) right after that `record`.
  var movedSinceCleared = false

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
    movedSinceCleared = true
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

  /// Removes a beacon's entry (not its address index), moving the last entry into its place.
  mutating func remove(_ id: BeaconID) {
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

  mutating func unindex(_ beacon: TrackedBeacon) {
    guard var ids = idsByAddress.removeValue(forKey: beacon.address) else { return }
    ids.remove(beacon.id)
    if !ids.isEmpty { idsByAddress[beacon.address] = ids }
  }
}
