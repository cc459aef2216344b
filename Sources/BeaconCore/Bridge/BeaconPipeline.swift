/// The whole beacon path as one synchronous state machine: advertisement → frames → presence →
/// active beacon → trip resolution → tagging.
///
/// Every call takes the time it happens at and returns what followed, in order. The façade
/// (`BeaconBridge`) runs it against a clock and a host; `simulate` and `replay` run the same
/// façade in virtual time.
///
/// The paths a key proves are in BeaconPipeline+Authentication.swift, the trip calls in
/// BeaconPipeline+Trips.swift.
public struct BeaconPipeline: Sendable {
  /// One step of what followed a call.
  public enum Step: Hashable, Sendable {
    case event(BridgeEvent)
    /// A tagged batch to hand to `ScopeHost.postTripEventBatch`, in this order.
    case post(TaggedTripBatch)
  }

  // What the extensions in BeaconPipeline+Authentication.swift and BeaconPipeline+Trips.swift
  // change is set internally; the rest only here.
  public private(set) var configuration: BridgeConfiguration
  public private(set) var tracker: PresenceTracker
  public private(set) var selector: ActiveBeaconSelector
  public private(set) var pairings: PairingSet
  public internal(set) var resolver: BeaconTripResolver
  public internal(set) var tagger = TripTagger()
  /// TLM and URL frames linked to beacons, health, and ignored frame kinds counted.
  public internal(set) var health: BeaconHealthBook
  /// Resolves EIDs and resolvable private addresses to pairings by key; nil resolves nothing.
  public internal(set) var authenticator: (any BeaconAuthenticator)?
  /// `authenticator?.resolvesAddresses`, read on every advertisement: addresses are tried only
  /// when a pairing has an IRK.
  private(set) var triesAddresses = false
  /// Replayed EIDs refused (`status`, doctor).
  public internal(set) var eidReplaysRefused = 0
  /// Replayed resolvable private addresses refused (`status`, doctor).
  public internal(set) var rpaReplaysRefused = 0

  public init(configuration: BridgeConfiguration = BridgeConfiguration(), pairings: PairingSet = PairingSet())
  {
    self.configuration = configuration
    self.pairings = pairings
    tracker = PresenceTracker(settings: configuration.presence)
    selector = ActiveBeaconSelector(settings: configuration.selector)
    resolver = BeaconTripResolver(settings: configuration.trips)
    health = BeaconHealthBook(settings: configuration.health)
  }

  /// Applies new settings (SIGHUP). State in progress is kept.
  /// New settings. Under `requireAuthenticated`, an active beacon whose identity is sent in
  /// clear stops being active at once: the next trip must not snapshot what the policy refuses.
  @discardableResult
  public mutating func reconfigure(_ configuration: BridgeConfiguration, at time: Timestamp = .zero) -> [Step]
  {
    self.configuration = configuration
    tracker.settings = configuration.presence
    selector.settings = configuration.selector
    resolver.settings = configuration.trips
    health.settings = configuration.health
    guard configuration.requireAuthenticated, let active = selector.active, !active.id.isKeyed else {
      return []
    }
    selector.dropActive()
    return activeChanged(nil, at: time)
  }

  /// Hands the pipeline the keys (at start, and when a pairing by key is added or removed).
  public mutating func setAuthenticator(_ authenticator: (any BeaconAuthenticator)?) {
    self.authenticator = authenticator
    triesAddresses = authenticator?.resolvesAddresses ?? false
  }

  // MARK: Radio

  public mutating func ingest(_ event: borrowing SourceEvent, at time: Timestamp) -> [Step] {
    ingest(event, at: time, fastPath: true)
  }

  /// `ingest` for `events` from `index` on, up to and including the first that has steps (which
  /// it returns); `index` is left after the last event ingested. For a source's batch, read in
  /// place: the caller cannot pass `events[index]` to a mutating call without a copy of the
  /// event (the compiler cannot tell that the call leaves the buffer alone), a retain and a
  /// release of each of its advertisement's arrays.
  public mutating func ingest(
    _ events: UnsafeBufferPointer<SourceEvent>, from index: inout Int, at time: Timestamp
  ) -> [Step] {
    while index < events.count {
      var steps: [Step] = []
      // What the common case needs is read first, by a call that mutates nothing, so that the
      // event is read where it is: passed to a mutating call, it was copied first.
      if let sole = Self.soleIBeacon(events[index]),
        !triesAddresses || !sole.address.isResolvablePrivateForm
      {
        sighted(
          .iBeacon(sole.frame), id: .iBeacon(sole.frame.identity), address: sole.address, rssi: sole.rssi,
          at: time,
          into: &steps)
      } else {
        steps = ingest(events[index], at: time, fastPath: false)
      }
      index += 1
      if !steps.isEmpty { return steps }
    }
    return []
  }

  /// A sighting of one iBeacon and nothing else (`BeaconFrameParser.soleIBeacon`), with what
  /// presence reads of its advertisement.
  struct SoleIBeacon {
    var frame: IBeaconFrame
    var address: BluetoothAddress
    var rssi: Int?
  }

  static func soleIBeacon(_ event: borrowing SourceEvent) -> SoleIBeacon? {
    switch event {
    case .sighting(let ad):
      guard let frame = BeaconFrameParser.soleIBeacon(ad) else { return nil }
      return SoleIBeacon(frame: frame, address: ad.address, rssi: ad.rssi)
    case .lost, .rejected:
      return nil
    }
  }

  /// `ingest`; `fastPath` false takes the general path for every advertisement (tests compare
  /// the two).
  mutating func ingest(_ event: borrowing SourceEvent, at time: Timestamp, fastPath: Bool) -> [Step] {
    switch event {
    case .sighting(let ad):
      if fastPath, let frame = BeaconFrameParser.soleIBeacon(ad) {
        // A private-form address, when a pairing has an IRK, goes the general way. Tested here
        // rather than in the `if`: there, it kept the compiler from inlining `sighted` into
        // this path (callgrind: 80 instructions per advertisement more).
        if triesAddresses, ad.address.isResolvablePrivateForm { return sighted(ad, at: time) }
        // The common case: one iBeacon and nothing else (`soleIBeacon`), as `sighted` would
        // handle it, without a `FrameParseResult`.
        var steps: [Step] = []
        sighted(.iBeacon(frame), id: .iBeacon(frame.identity), from: ad, at: time, into: &steps)
        return steps
      }
      return sighted(ad, at: time)
    case .lost(let address):
      let exits = tracker.lost(address, at: time)
      for case .exited(let b, _) in exits { exited(b) }
      return exits.map { .event(presenceEvent($0)) }
    case .rejected(let address, let rejection):
      return [.event(.rejected(address: address, rejection))]
    }
  }

  private mutating func sighted(_ ad: Advertisement, at time: Timestamp) -> [Step] {
    // An EID beacon's advertisement, when a pairing has a key: the frame straight to its
    // resolver, without a `FrameParseResult` (`make bench-check`'s eidPipeline). Here rather
    // than beside the iBeacon fast path, where it kept the compiler from inlining that path.
    if authenticator != nil, !triesAddresses || !ad.address.isResolvablePrivateForm,
      let eid = BeaconFrameParser.soleEID(ad)
    {
      var steps: [Step] = []
      heardEID(eid, frame: .eddystoneEID(eid), from: ad, at: time, into: &steps)
      return steps
    }
    let parsed = BeaconFrameParser.parse(ad)
    var steps: [Step] = parsed.rejections.map { .event(.rejected(address: ad.address, $0)) }
    let proven = provenByAddress(ad, frames: parsed.frames, at: time, into: &steps)
    for frame in parsed.frames {
      if case .eddystoneEID(let eid) = frame {
        heardEID(eid, frame: frame, from: ad, at: time, into: &steps)
        continue
      }
      if case .ignored(let ignored) = frame, ignored.frameType == 0x20, ignored.version == 0x01,
        let opened = openedTLM(ad, at: time)
      {
        steps += heardAbout(opened, from: ad.address, at: time)
        continue
      }
      guard let id = frame.beaconID else {
        steps += heardAbout(frame, from: ad.address, at: time)
        continue
      }
      // An address that proved a pairing stands for the device: an identity it also sends in
      // clear would make it two beacons.
      guard !proven else { continue }
      sighted(frame, id: id, from: ad, at: time, into: &steps)
    }
    return steps
  }

  /// `sighted` for a pairing by key: one call site of the inlined `sighted` for every path that
  /// resolves a key, kept out of the general path's code.
  @inline(never)
  mutating func sightedByKey(
    _ frame: BeaconFrame, _ key: KeyedIdentity, from ad: Advertisement, at time: Timestamp,
    into steps: inout [Step]
  ) {
    sighted(frame, id: .keyed(key), address: ad.address, rssi: ad.rssi, at: time, into: &steps)
  }

  /// A frame with an identity (`id`, its `beaconID`): presence, health, the active beacon.
  @inline(__always)
  private mutating func sighted(
    _ frame: BeaconFrame, id: BeaconID, from ad: Advertisement, at time: Timestamp, into steps: inout [Step]
  ) {
    sighted(frame, id: id, address: ad.address, rssi: ad.rssi, at: time, into: &steps)
  }

  /// `sighted` with what it reads of the advertisement: its address and its RSSI.
  @inline(__always)
  private mutating func sighted(
    _ frame: BeaconFrame, id: BeaconID, address: BluetoothAddress, rssi: Int?, at time: Timestamp,
    into steps: inout [Step]
  ) {
    let (index, entered) = tracker.record(frame, id: id, address: address, rssi: rssi, at: time)
    if entered {
      steps.append(.event(.beaconEntered(tracker.beacon(at: index))))
      health.linkURL(id, from: address)
      steps += health.entered(id, at: time, pairings: pairings).map { .event(.beaconHealth($0)) }
    }
    if health.hasPending {
      let (reports, changes) = health.identityHeard(id, from: address, at: time, pairings: pairings)
      steps += reports.map { .event(.telemetry($0)) } + changes.map { .event(.beaconHealth($0)) }
    }
    // Nearly every sighting is from the beacon's last address: only a change is looked at. A
    // flag the tracker sets off its common path, not a third value `record` returns: returning it
    // cost presence alone 6 instructions per advertisement (callgrind); the flag costs 2 here.
    if tracker.movedSinceCleared { addressChanged(id, to: address, at: time, into: &steps) }
    // The beacon is read (its distance derived) only when the selector needs it: for paired
    // beacons. Most beacons heard are not: for them the selector is not called at all.
    // Under `requireAuthenticated` an identity sent in clear, which anyone can copy, is never a
    // candidate.
    if let pairing = pairings.pairing(for: id),
      !configuration.requireAuthenticated || id.isKeyed,
      selector.sighted(
        paired: tracker.beacon(at: index), pairing: pairing, pairings: pairings, inRange: { tracker.inRange },
        at: time)
    {
      steps += activeChanged(selector.active, at: time)
    }
  }

  /// A beacon in range heard from another address than its last sighting's: for a paired plain
  /// identity, the clone rule (`CloneWatch`). A pairing by key proves itself whatever the address
  /// (an EID beacon or an RPA device rotates it), so it is never a clone. Out of line, so that
  /// the sighting from the same address stays as small as it was.
  @inline(never)
  private mutating func addressChanged(
    _ id: BeaconID, to address: BluetoothAddress, at time: Timestamp, into steps: inout [Step]
  ) {
    tracker.movedSinceCleared = false
    guard !id.isKeyed, let pairing = pairings.pairing(for: id) else { return }
    for change in health.addressChanged(id, to: address, at: time, pairing: pairing) {
      steps.append(.event(.beaconHealth(change)))
    }
  }

  /// A frame without an identity: TLM and URL are linked to the identities heard from the same
  /// address (`BeaconHealthBook`); ignored kinds are counted.
  private mutating func heardAbout(_ frame: BeaconFrame, from address: BluetoothAddress, at time: Timestamp)
    -> [Step]
  {
    let since = Timestamp(seconds: time.seconds - health.settings.telemetryLinkWindow)
    switch frame {
    case .eddystoneTLM(let tlm):
      let ids = tracker.ids(heardFrom: address, since: since)
      let (reports, changes) = health.telemetry(
        Telemetry(tlm, from: address, at: time), ids: ids, pairings: pairings)
      return reports.map { .event(.telemetry($0)) } + changes.map { .event(.beaconHealth($0)) }
    case .eddystoneURL(let url):
      let ids = tracker.ids(heardFrom: address, since: since)
      guard health.url(url, from: address, ids: ids) else { return [] }
      return [.event(.eddystoneURL(address: address, url, ids: ids))]
    case .ignored(let ignored):
      health.countIgnored(ignored)
      return []
    case .iBeacon, .altBeacon, .eddystoneUID, .eddystoneEID:
      return []
    }
  }

  /// A beacon left presence.
  private mutating func exited(_ beacon: TrackedBeacon) {
    selector.exited(beacon.id)
    health.exited(beacon, paired: pairings.pairing(for: beacon.id) != nil)
  }

  private func presenceEvent(_ e: PresenceEvent) -> BridgeEvent {
    switch e {
    case .entered(let b): .beaconEntered(b)
    case .exited(let b, let reason): .beaconExited(b, reason)
    }
  }

  private mutating func activeChanged(_ active: ActiveBeacon?, at time: Timestamp) -> [Step] {
    var steps: [Step] = [.event(.activeBeaconChanged(active))]
    for (tripId, resolution) in resolver.activeChanged(active, at: time) {
      steps += tagged(tripId, resolution)
    }
    return steps
  }

  /// A trip's resolution became known: report it and release its held batches.
  mutating func tagged(_ tripId: TripID, _ resolution: TripResolution) -> [Step] {
    var steps: [Step] = [.event(.tripTagged(tripId: tripId, resolution))]
    steps += tagger.release(tripId, resolution: resolution).map { .post($0) }
    return steps
  }

  // MARK: Time

  /// Handles every deadline due at `time`: beacon exits, the active hold, late windows.
  public mutating func tick(at time: Timestamp) -> [Step] {
    var steps: [Step] = []
    for exit in tracker.expire(at: time) {
      if case .exited(let b, _) = exit { exited(b) }
      steps.append(.event(presenceEvent(exit)))
    }
    steps += health.expire(at: time, pairings: pairings).map { .event(.beaconHealth($0)) }
    if let change = selector.expire(at: time) { steps += activeChanged(change, at: time) }
    for (tripId, resolution) in resolver.expire(at: time) {
      steps += tagged(tripId, resolution)
    }
    return steps
  }

  /// The earliest time `tick` has something to do. Mutating: presence and trips keep their
  /// deadlines in heaps, which it tidies.
  public var nextDeadline: Timestamp? {
    mutating get {
      [tracker.nextDeadline, selector.nextDeadline, resolver.nextDeadline, health.nextDeadline].compactMap {
        $0
      }
      .min()
    }
  }

  // MARK: Pairings

  public mutating func setPairings(_ newPairings: PairingSet, at time: Timestamp) -> [Step] {
    pairings = newPairings
    guard let change = selector.pairingsChanged(newPairings) else { return [] }
    return activeChanged(change, at: time)
  }
}
