/// Active-beacon settings; every number is a configuration key (docs/DESIGN.md, Behaviour).
public struct SelectorSettings: Hashable, Sendable {
  /// A candidate counts once it has been seen this many times…
  public var dwellSightings: Int = 2
  /// …over at least this many seconds.
  public var dwellSeconds: Double = 2
  /// Another candidate must be this much stronger (smoothed, dB)…
  public var switchMargin: Double = 6
  /// …for this long, confirmed by its own fresh sightings, before the active beacon switches.
  public var switchSustain: Double = 5
  /// The active beacon is held this long after its last sighting: a Raspberry Pi-class receiver
  /// can miss 60% of packets.
  public var activeHold: Double = 30

  public init() {}
}

/// The paired beacon that is reliably in range, and what it resolves to.
public struct ActiveBeacon: Hashable, Sendable {
  public var id: BeaconID
  public var pairing: Pairing
  public var since: Timestamp
  public var lastSeen: Timestamp
  public var smoothedRSSI: Double?
  public var lastRSSI: Int?
  public var distance: Double?
  public var proximity: Proximity

  public var deviceId: DeviceID { pairing.deviceId }
}

/// Chooses the active beacon among paired beacons in range.
///
/// - Only paired beacons are candidates.
/// - A candidate needs a dwell: `dwellSightings` sightings over `dwellSeconds`.
/// - With no active beacon, the strongest qualified candidate wins.
/// - The active beacon switches only when another candidate is `switchMargin` dB stronger for
///   `switchSustain` seconds, measured on the challenger's own sightings, so that a beacon
///   passing by for a few seconds, whose smoothed value lingers after it has gone, never wins.
/// - The active beacon is held for `activeHold` after its last sighting, even when presence has
///   already let it exit.
public struct ActiveBeaconSelector: Sendable {
  public var settings: SelectorSettings
  public private(set) var active: ActiveBeacon?

  private struct Candidate: Sendable {
    var visitStart: Timestamp
    var sightings: Int
    var lastSeen: Timestamp
    var challengerSince: Timestamp?
  }

  private var candidates: [BeaconID: Candidate] = [:]

  public init(settings: SelectorSettings = SelectorSettings()) {
    self.settings = settings
  }

  /// Whether a candidate has completed its dwell.
  public func isQualified(_ id: BeaconID) -> Bool {
    guard let c = candidates[id] else { return false }
    return c.sightings >= settings.dwellSightings && c.lastSeen - c.visitStart >= settings.dwellSeconds
  }

  /// Handles one sighting of a tracked beacon whose pairing is `pairing`
  /// (`pairings.pairing(for: beacon.id)`), which the caller has looked up first: for an unpaired
  /// beacon (most of them) nothing else runs, and neither the beacon nor `inRange` is built.
  /// `inRange` is evaluated only when a qualified candidate finds no active beacon: it sorts every
  /// tracked beacon, too costly for every sighting. Returns whether the active beacon changed; it
  /// is then `active` (never nil: a sighting only ever activates).
  mutating func sighted(
    paired beacon: TrackedBeacon, pairing: Pairing, pairings: PairingSet,
    inRange: () -> [TrackedBeacon], at time: Timestamp
  ) -> Bool {
    var candidate =
      candidates[beacon.id]
      ?? Candidate(visitStart: beacon.firstSeen, sightings: 0, lastSeen: time, challengerSince: nil)
    candidate.sightings += 1
    candidate.lastSeen = time
    candidates[beacon.id] = candidate

    if var current = active, current.id == beacon.id {
      current.lastSeen = time
      current.smoothedRSSI = beacon.smoothedRSSI
      current.lastRSSI = beacon.lastRSSI
      current.distance = beacon.distance
      current.proximity = beacon.proximity
      current.pairing = pairing
      active = current
      // The active beacon holding its ground resets every challenge against it.
      return false
    }
    guard isQualified(beacon.id) else { return false }

    guard let current = active else {
      // No active beacon: the strongest qualified candidate in range wins.
      let best =
        inRange().filter { pairings.pairing(for: $0.id) != nil && isQualified($0.id) }.first ?? beacon
      activate(best, pairing: pairings.pairing(for: best.id) ?? pairing, at: time)
      return true
    }

    // A challenge: stronger by the margin, on this sighting.
    let stronger: Bool
    switch (beacon.smoothedRSSI, current.smoothedRSSI) {
    case (let challenger?, let incumbent?): stronger = challenger >= incumbent + settings.switchMargin
    case (.some, nil): stronger = true
    default: stronger = false
    }
    guard stronger else {
      candidates[beacon.id]?.challengerSince = nil
      return false
    }
    let since = candidate.challengerSince ?? time
    candidates[beacon.id]?.challengerSince = since
    guard time - since >= settings.switchSustain else { return false }
    activate(beacon, pairing: pairing, at: time)
    return true
  }

  /// A beacon left presence. Its dwell starts again on its next visit; if it is the active beacon,
  /// it stays active until its hold runs out.
  public mutating func exited(_ id: BeaconID) {
    if active?.id != id { candidates[id] = nil }
  }

  /// Drops the active beacon once its hold has run out. Returns `.some(nil)` when it did.
  public mutating func expire(at time: Timestamp) -> ActiveBeacon?? {
    guard let current = active, time - current.lastSeen >= settings.activeHold else { return nil }
    active = nil
    candidates[current.id] = nil
    return .some(nil)
  }

  /// Re-checks the active beacon against new pairings (after pair/unpair). Returns the change.
  /// Ends the active beacon now, without its hold (a policy that no longer allows it).
  mutating func dropActive() {
    guard let current = active else { return }
    active = nil
    candidates[current.id] = nil
  }

  public mutating func pairingsChanged(_ pairings: PairingSet) -> ActiveBeacon?? {
    candidates = candidates.filter { pairings.pairing(for: $0.key) != nil }
    guard let current = active else { return nil }
    guard let pairing = pairings.pairing(for: current.id) else {
      active = nil
      return .some(nil)
    }
    if pairing != current.pairing {
      active?.pairing = pairing
      return .some(active)
    }
    return nil
  }

  /// When the active beacon's hold runs out.
  public var nextDeadline: Timestamp? {
    active.map { $0.lastSeen + settings.activeHold }
  }

  private mutating func activate(_ beacon: TrackedBeacon, pairing: Pairing, at time: Timestamp) {
    for key in candidates.keys { candidates[key]?.challengerSince = nil }
    let chosen = ActiveBeacon(
      id: beacon.id, pairing: pairing, since: time, lastSeen: candidates[beacon.id]?.lastSeen ?? time,
      smoothedRSSI: beacon.smoothedRSSI, lastRSSI: beacon.lastRSSI, distance: beacon.distance,
      proximity: beacon.proximity)
    active = chosen
  }
}
