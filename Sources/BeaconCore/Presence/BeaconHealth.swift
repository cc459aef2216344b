/// Links Eddystone-TLM and -URL frames to beacon identities by address, and keeps each beacon's
/// health.
///
/// Linking: a TLM (or URL) frame carries no identity; it describes whoever sent it. It is linked
/// to every identity presence last heard from the same address, if heard within
/// `telemetryLinkWindow`; a frame heard before any identity from its address waits that long for
/// one. Vendor beacons (Kontakt, Minew, Estimote, Ruuvi) interleave an iBeacon or Eddystone-UID
/// with TLM from one address, so they link. A beacon that rotates its address for all of its
/// frames at once links again on the new address once an identity frame is heard from it. What
/// is not linked: TLM sent from a different address than the identity (separate advertising sets
/// with their own random addresses), and TLM whose address changed before any identity frame was
/// heard from the new address within the window; such TLM is still reported, without a beacon.
public struct BeaconHealthBook: Sendable {
  public var settings: HealthSettings
  /// Health by beacon, for beacons that sent TLM or URL frames, and for paired beacons.
  public private(set) var health: [BeaconID: BeaconHealth] = [:]
  /// When paired beacons that left were last seen (presence forgets them when they exit): at most
  /// `maximumDeparted`, the longest gone forgotten past it (a pairing that leaves out the minor
  /// matches many identities).
  public private(set) var departedLastSeen: [BeaconID: Timestamp] = [:]
  /// When each departed beacon falls silent (`departedLastSeen` plus `silentAfter`), as a heap, so
  /// that a step finds the next silence without a scan. An element whose beacon came back, or
  /// left again since, is no longer in force and is dropped when it reaches the top.
  private var silences = DeadlineHeap<BeaconID>()
  /// The `silentAfter` the heap's deadlines were made with (a reload may change it).
  private var silencesAfter: Double?
  /// The departures in the order they came, for forgetting the longest gone past the bound
  /// without a scan; an entry whose beacon came back, or left again since, is skipped.
  private var departures: [(id: BeaconID, lastSeen: Timestamp)] = []
  private var departuresHead = 0
  /// TLM heard from an address no identity was heard from yet.
  private var pending: [BluetoothAddress: Telemetry] = [:]
  /// The URL last heard from each address, with its Tx power.
  private var urls: [BluetoothAddress: (url: String, txPower: Int)] = [:]
  /// Frames of known kinds that are not decoded (`IgnoredFrame.kind`), counted.
  public private(set) var ignoredFrames: [String: Int] = [:]
  /// The clone rule's state for each paired plain identity heard from more than one address.
  private(set) var clones: [BeaconID: CloneWatch] = [:]
  /// How many of `clones` are flagged: while none is, ticks do not look at them.
  private var flaggedClones = 0

  /// Bounds on what is kept per address, against floods of random addresses.
  static let maximumPending = 1024
  static let maximumURLs = 4096
  /// A bound on `clones`: a pairing that leaves out the major or the minor matches many
  /// identities, all of which a flood could make move.
  static let maximumCloneWatches = 256
  static let maximumDeparted = 4096

  public init(settings: HealthSettings = HealthSettings()) {
    self.settings = settings
  }

  public var hasPending: Bool { !pending.isEmpty }

  mutating func countIgnored(_ frame: IgnoredFrame) {
    ignoredFrames[frame.kind, default: 0] += 1
  }

  /// A TLM frame from `address`, linked to `ids` (the identities heard from it within the
  /// window). Returns the reports and the threshold crossings of paired beacons.
  mutating func telemetry(
    _ telemetry: Telemetry, ids: [BeaconID], pairings: PairingSet
  ) -> (reports: [TelemetryReport], changes: [HealthChange]) {
    guard !ids.isEmpty else {
      if pending.count >= Self.maximumPending { prunePending(at: telemetry.heardAt) }
      if pending.count < Self.maximumPending { pending[telemetry.address] = telemetry }
      return ([TelemetryReport(id: nil, telemetry: telemetry)], [])
    }
    var reports: [TelemetryReport] = []
    var changes: [HealthChange] = []
    for id in ids {
      reports.append(TelemetryReport(id: id, telemetry: telemetry))
      changes += apply(telemetry, to: id, pairings: pairings)
    }
    return (reports, changes)
  }

  /// An identity was heard from `address`: TLM waiting there within the window is linked to it.
  mutating func identityHeard(
    _ id: BeaconID, from address: BluetoothAddress, at time: Timestamp, pairings: PairingSet
  ) -> (reports: [TelemetryReport], changes: [HealthChange]) {
    guard let waiting = pending.removeValue(forKey: address),
      time - waiting.heardAt <= settings.telemetryLinkWindow
    else { return ([], []) }
    return ([TelemetryReport(id: id, telemetry: waiting)], apply(waiting, to: id, pairings: pairings))
  }

  private mutating func prunePending(at time: Timestamp) {
    let window = settings.telemetryLinkWindow
    pending = pending.filter { time - $0.value.heardAt <= window }
  }

  private mutating func apply(_ telemetry: Telemetry, to id: BeaconID, pairings: PairingSet) -> [HealthChange]
  {
    var entry = health[id] ?? BeaconHealth()
    var kinds: [HealthChange.Kind] = []
    // A reboot: uptime went backwards (SEC_CNT restarts at 0 on power-on; it wraps only after
    // 13.6 years).
    if let previous = entry.telemetry, telemetry.uptime < previous.uptime,
      telemetry.heardAt >= previous.heardAt
    {
      entry.reboots += 1
      entry.lastRebootAt = telemetry.heardAt
      kinds.append(.rebooted)
    }
    if let mv = telemetry.batteryMillivolts.map(Double.init) {
      if !entry.batteryLow, mv < settings.lowBatteryMillivolts {
        entry.batteryLow = true
        kinds.append(.batteryLow)
      } else if entry.batteryLow, mv >= settings.lowBatteryMillivolts + HealthSettings.batteryHysteresis {
        entry.batteryLow = false
        kinds.append(.batteryRecovered)
      }
    }
    if entry.telemetry.map({ $0.heardAt <= telemetry.heardAt }) ?? true { entry.telemetry = telemetry }
    health[id] = entry
    guard let pairing = pairings.pairing(for: id) else { return [] }
    return kinds.map {
      HealthChange(kind: $0, id: id, deviceId: pairing.deviceId, health: entry, lastSeen: telemetry.heardAt)
    }
  }

  /// An Eddystone-URL frame from `address`, linked to `ids`. True when the address's URL is new or
  /// changed (worth a line of output).
  mutating func url(_ frame: EddystoneURLFrame, from address: BluetoothAddress, ids: [BeaconID]) -> Bool {
    let known = urls[address]
    let changed = known?.url != frame.url || known?.txPower != Int(frame.txPower)
    if changed {
      if urls.count >= Self.maximumURLs { urls.removeAll(keepingCapacity: true) }
      urls[address] = (frame.url, Int(frame.txPower))
    }
    for id in ids {
      var entry = health[id] ?? BeaconHealth()
      guard entry.url != frame.url || entry.urlTxPower != Int(frame.txPower) else { continue }
      entry.url = frame.url
      entry.urlTxPower = Int(frame.txPower)
      health[id] = entry
    }
    return changed
  }

  /// A URL heard from `address` before an identity, linked when the identity is heard.
  mutating func linkURL(_ id: BeaconID, from address: BluetoothAddress) {
    guard let known = urls[address], health[id]?.url != known.url else { return }
    var entry = health[id] ?? BeaconHealth()
    entry.url = known.url
    entry.urlTxPower = known.txPower
    health[id] = entry
  }

  /// A beacon left presence: a paired one's last sighting is kept (for `silentAfter`), an
  /// unpaired one's health is forgotten.
  mutating func exited(_ beacon: TrackedBeacon, paired: Bool) {
    if paired {
      refreshSilences()
      departedLastSeen[beacon.id] = beacon.lastSeen
      silences.push(beacon.lastSeen.seconds + settings.silentAfter, beacon.id)
      departures.append((beacon.id, beacon.lastSeen))
      forgetLongestGone()
      if silences.needsRebuild(live: departedLastSeen.count) { rebuildSilences() }
    } else {
      health.removeValue(forKey: beacon.id)
    }
  }

  /// A beacon was seen (entered presence): no longer departed; a silent one is seen again.
  mutating func entered(_ id: BeaconID, at time: Timestamp, pairings: PairingSet) -> [HealthChange] {
    departedLastSeen.removeValue(forKey: id)
    guard var entry = health[id], entry.silent else { return [] }
    entry.silent = false
    health[id] = entry
    guard let pairing = pairings.pairing(for: id) else { return [] }
    return [HealthChange(kind: .seenAgain, id: id, deviceId: pairing.deviceId, health: entry, lastSeen: time)]
  }

  /// A paired plain identity (`pairing` its pairing) heard from `address`, its last sighting
  /// having been from another (`CloneWatch`). Returns `possibleClone` when this reaches the rule.
  mutating func addressChanged(
    _ id: BeaconID, to address: BluetoothAddress, at time: Timestamp, pairing: Pairing
  ) -> [HealthChange] {
    guard let (returned, clone) = clones[id]?.moved(to: address, at: time) else {
      if clones.count >= Self.maximumCloneWatches { pruneClones(at: time) }
      if clones.count < Self.maximumCloneWatches { clones[id] = CloneWatch(address: address, at: time) }
      return []
    }
    guard returned, let watch = clones[id] else { return [] }
    var entry = health[id] ?? BeaconHealth()
    let addresses = watch.concurrent(at: time)
    if watch.flagged {
      // Still a clone: a further transmitter joins the addresses shown (up to the watch's bound).
      let new = addresses.filter { !entry.cloneAddresses.contains($0) }
      guard !new.isEmpty else { return [] }
      entry.cloneAddresses = Array((entry.cloneAddresses + new).sorted().prefix(CloneWatch.kept))
      health[id] = entry
      return []
    }
    guard clone else { return [] }
    clones[id]?.flagged = true
    flaggedClones += 1
    entry.possibleClone = true
    entry.cloneAddresses = addresses
    health[id] = entry
    return [
      HealthChange(kind: .possibleClone, id: id, deviceId: pairing.deviceId, health: entry, lastSeen: time)
    ]
  }

  /// Forgets the watches of identities neither flagged nor heard moving for a quiet period.
  private mutating func pruneClones(at time: Timestamp) {
    clones = clones.filter {
      $0.value.flagged || time - $0.value.lastActivity < HealthSettings.cloneQuietPeriod
    }
  }

  /// Possible clones without a return for `cloneQuietPeriod` as of `time` clear.
  private mutating func clearClones(at time: Timestamp, pairings: PairingSet) -> [HealthChange] {
    guard flaggedClones > 0 else { return [] }
    var changes: [HealthChange] = []
    for id in clones.keys.sorted() where clones[id]?.flagged == true && clones[id]?.isQuiet(at: time) == true
    {
      clones[id]?.clear()
      flaggedClones -= 1
      guard var entry = health[id] else { continue }
      entry.possibleClone = false
      entry.cloneAddresses = []
      health[id] = entry
      guard let pairing = pairings.pairing(for: id) else { continue }
      changes.append(
        HealthChange(
          kind: .cloneCleared, id: id, deviceId: pairing.deviceId, health: entry,
          lastSeen: clones[id]?.lastReturn))
    }
    return changes
  }

  /// Paired beacons not seen for `silentAfter` as of `time` become silent; possible clones quiet
  /// for `cloneQuietPeriod` clear.
  mutating func expire(at time: Timestamp, pairings: PairingSet) -> [HealthChange] {
    var changes = clearClones(at: time, pairings: pairings)
    refreshSilences()
    var due: [BeaconID: Timestamp] = [:]
    while let top = silences.top, top.deadline <= time.seconds {
      silences.pop()
      guard isInForce(top), let lastSeen = departedLastSeen[top.tag] else { continue }
      due[top.tag] = lastSeen
    }
    // In identity order, as a scan of the departed gave them.
    for (id, lastSeen) in due.sorted(by: { $0.key < $1.key }) {
      guard let pairing = pairings.pairing(for: id) else {
        departedLastSeen.removeValue(forKey: id)
        continue
      }
      var entry = health[id] ?? BeaconHealth()
      entry.silent = true
      health[id] = entry
      changes.append(
        HealthChange(kind: .silent, id: id, deviceId: pairing.deviceId, health: entry, lastSeen: lastSeen))
    }
    return changes
  }

  /// When the next paired beacon becomes silent, or the next possible clone clears.
  var nextDeadline: Timestamp? {
    mutating get {
      refreshSilences()
      while let top = silences.top, !isInForce(top) { silences.pop() }
      let silence = silences.top.map { Timestamp(seconds: $0.deadline) }
      guard flaggedClones > 0 else { return silence }
      let clear = clones.values.lazy.filter(\.flagged).compactMap(\.lastReturn)
        .map { $0 + HealthSettings.cloneQuietPeriod }.min()
      return [silence, clear].compactMap { $0 }.min()
    }
  }

  /// Whether a silence element still stands: its beacon is departed since the time it was made
  /// for, and not yet silent.
  private func isInForce(_ element: DeadlineHeap<BeaconID>.Element) -> Bool {
    guard let lastSeen = departedLastSeen[element.tag], health[element.tag]?.silent != true else {
      return false
    }
    return lastSeen.seconds + settings.silentAfter == element.deadline
  }

  /// Past `maximumDeparted`, the departures longest gone are forgotten (their silence too).
  private mutating func forgetLongestGone() {
    while departedLastSeen.count > Self.maximumDeparted, departuresHead < departures.count {
      let (id, lastSeen) = departures[departuresHead]
      departuresHead += 1
      if departedLastSeen[id] == lastSeen { departedLastSeen.removeValue(forKey: id) }
    }
    // The skipped entries are dropped once they are half the queue: O(1) a departure, amortized.
    if departuresHead > 64, departuresHead * 2 > departures.count {
      departures.removeFirst(departuresHead)
      departuresHead = 0
    }
    if departures.count - departuresHead > 2 * Self.maximumDeparted {
      departures = departures[departuresHead...].filter { self.departedLastSeen[$0.id] == $0.lastSeen }
      departuresHead = 0
    }
  }

  /// The heap made again when `silentAfter` changed since its deadlines were made.
  private mutating func refreshSilences() {
    guard silencesAfter != settings.silentAfter else { return }
    silencesAfter = settings.silentAfter
    rebuildSilences()
  }

  private mutating func rebuildSilences() {
    let live = departedLastSeen.filter { self.health[$0.key]?.silent != true }
    _ = silences.rebuild(live.map { (deadline: $0.value.seconds + settings.silentAfter, tag: $0.key) })
  }
}
