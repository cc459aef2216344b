#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Presence settings; every number is a configuration key.
public struct PresenceSettings: Hashable, Sendable {
  /// A beacon exits when it has not been seen for this long (DESIGN §5: 10 s)… Backends whose
  /// cadence is slower (BlueZ active discovery, about one report per 10.24 s window) use a larger
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
public struct PresenceTracker: Sendable {
  public var settings: PresenceSettings

  private struct Entry: Sendable {
    var beacon: TrackedBeacon
    var filter: any RSSIFilter
    /// Recent sighting times, for the interval and loss estimate.
    var recent: [Timestamp]
    var exitAfter: Double
  }

  /// How many recent sightings the interval and loss estimate looks at.
  static let historyLength = 64

  private var entries: [BeaconID: Entry] = [:]
  /// The beacons last heard from each address, so that `lost` need not scan every entry (a flood
  /// of random addresses made that quadratic).
  private var idsByAddress: [BluetoothAddress: Set<BeaconID>] = [:]

  public init(settings: PresenceSettings = PresenceSettings()) {
    self.settings = settings
  }

  /// The beacons in range, strongest first (then by identity, so the order is stable).
  public var inRange: [TrackedBeacon] {
    entries.values.map(\.beacon).sorted { a, b in
      switch (a.smoothedRSSI, b.smoothedRSSI) {
      case (let x?, let y?) where x != y: return x > y
      case (.some, nil): return true
      case (nil, .some): return false
      default: return a.id < b.id
      }
    }
  }

  public func beacon(_ id: BeaconID) -> TrackedBeacon? { entries[id]?.beacon }

  /// Records a sighting of a beacon frame. A sighting without RSSI still counts as presence.
  public mutating func observe(_ frame: BeaconFrame, from ad: Advertisement, at time: Timestamp)
    -> [PresenceEvent]
  {
    guard let id = frame.beaconID else { return [] }
    let rssi = ad.rssi.flatMap { RSSI.isKnown($0) ? $0 : nil }
    // Taken out and put back, so that `recent` and the filter are mutated in place rather than
    // copied while the dictionary still holds them.
    if var entry = entries.removeValue(forKey: id) {
      if entry.beacon.address != ad.address {
        unindex(entry.beacon)
        idsByAddress[ad.address, default: []].insert(id)
      }
      entry.beacon.address = ad.address
      entry.beacon.lastSeen = max(entry.beacon.lastSeen, time)
      entry.beacon.sightings += 1
      entry.beacon.powerAt1m = frame.powerAt1m ?? entry.beacon.powerAt1m
      entry.recent.append(time)
      if entry.recent.count > Self.historyLength {
        entry.recent.removeFirst(entry.recent.count - Self.historyLength)
      }
      entry.exitAfter = exitDelay(entry.recent)
      if let rssi {
        entry.beacon.lastRSSI = rssi
        entry.filter.add(Double(rssi), at: time)
      }
      refreshDerived(&entry, at: time)
      entries[id] = entry
      return []
    }
    var filter = settings.rssi.filter.make(settings: settings.rssi)
    if let rssi { filter.add(Double(rssi), at: time) }
    var entry = Entry(
      beacon: TrackedBeacon(
        id: id, address: ad.address, firstSeen: time, lastSeen: time, sightings: 1, lastRSSI: rssi,
        smoothedRSSI: nil, powerAt1m: frame.powerAt1m, distance: nil, proximity: .unknown),
      filter: filter, recent: [time], exitAfter: settings.exitTimeout)
    refreshDerived(&entry, at: time)
    entries[id] = entry
    idsByAddress[ad.address, default: []].insert(id)
    return [.entered(entry.beacon)]
  }

  /// The backend reports a device gone: every beacon last heard from that address exits.
  public mutating func lost(_ address: BluetoothAddress, at time: Timestamp) -> [PresenceEvent] {
    let ids = idsByAddress.removeValue(forKey: address) ?? []
    let gone = ids.compactMap { entries[$0]?.beacon }.sorted { $0.id < $1.id }
    for beacon in gone { entries[beacon.id] = nil }
    return gone.map { .exited($0, .lost) }
  }

  /// Exits every beacon not seen for `exitTimeout`, as of `time`.
  public mutating func expire(at time: Timestamp) -> [PresenceEvent] {
    let gone = entries.values
      .filter { time - $0.beacon.lastSeen >= $0.exitAfter }
      .map(\.beacon)
      .sorted { ($0.lastSeen, $0.id) < ($1.lastSeen, $1.id) }
    for beacon in gone {
      entries[beacon.id] = nil
      unindex(beacon)
    }
    return gone.map { .exited($0, .timeout) }
  }

  /// When the next beacon would time out.
  public var nextDeadline: Timestamp? {
    entries.values.map { $0.beacon.lastSeen + $0.exitAfter }.min()
  }

  /// How long silence must last before a beacon exits, from its recent sightings.
  ///
  /// The advertising interval is the shortest recent gap (two packets in a row get through often
  /// enough); the loss rate is the share of expected packets that did not arrive. Silence of `t` seconds then has probability `loss^(t/interval)`
  /// of being bad luck; the beacon exits once that is below `exitMissProbability`.
  func exitDelay(_ recent: [Timestamp]) -> Double {
    guard recent.count >= 3 else { return settings.exitTimeout }
    var interval = Double.infinity
    for (a, b) in zip(recent, recent.dropFirst()) where b - a > 0.005 { interval = min(interval, b - a) }
    guard interval.isFinite else { return settings.exitTimeout }
    let span = recent.last! - recent.first!
    let expected = span / interval + 1
    // A Beta(4, 4) prior keeps a young estimate near 50% loss until the beacon has shown
    // otherwise; 0.05 covers the estimate's noise.
    let missed = max(0, expected - Double(recent.count))
    let loss = min(0.95, (missed + 4) / (expected + 8) + 0.05)
    let silence = interval * log(settings.exitMissProbability) / log(loss)
    return min(max(settings.exitTimeout, silence), max(settings.exitTimeout, settings.exitTimeoutMax))
  }

  private mutating func unindex(_ beacon: TrackedBeacon) {
    guard var ids = idsByAddress.removeValue(forKey: beacon.address) else { return }
    ids.remove(beacon.id)
    if !ids.isEmpty { idsByAddress[beacon.address] = ids }
  }

  private func refreshDerived(_ entry: inout Entry, at time: Timestamp) {
    entry.beacon.smoothedRSSI = entry.filter.value(at: time)
    if let smoothed = entry.beacon.smoothedRSSI, let power = entry.beacon.powerAt1m {
      entry.beacon.distance = settings.distance.distance(rssi: smoothed, powerAt1m: power)
    } else {
      entry.beacon.distance = nil
    }
    entry.beacon.proximity = settings.distance.proximity(distance: entry.beacon.distance)
  }
}
