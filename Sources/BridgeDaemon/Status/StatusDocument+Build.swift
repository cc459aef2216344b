import BeaconCore

/// The daemon's side of the contract: a `StatusDocument` from the bridge's state and what the
/// service knows besides. Ages are measured from the snapshot's `now` and rounded to 0.1 s.
extension StatusDocument {
  /// `droppedAdvertisements` and `manufacturerDataOverLimit` are the BlueZ source's counts (0
  /// for HCI); `fleet` is the link's state when `[Fleet]` is configured, `fleetSetAside` the
  /// version of a document set aside (`Store.fleetSetAside`).
  public init(
    _ status: BridgeStatus, scan: ScanCondition, outbox: OutboxSummary?, droppedAdvertisements: Int = 0,
    manufacturerDataOverLimit: Int = 0, fleet: FleetLinkState? = nil, fleetSetAside: Int64? = nil
  ) {
    let now = status.now
    armed = status.armed
    scanning = scan.scanningBackend
    self.scan = Scan(scan)
    beaconsInRange = status.beaconsInRange.map { BeaconInRange($0, health: status.health[$0.id], now: now) }
    activeBeacon = status.active.map(ActiveBeacon.init)
    trips = status.trips.map(Trip.init)
    outboundBatches = status.outboundBatches
    pairings = status.pairings.count
    pairedBeacons = status.pairedBeacons.map { PairedBeacon($0, now: now) }
    ignoredFrames = status.ignoredFrames
    upload = Upload(status.upload, now: now)
    authentication = Authentication(
      plainPairings: status.pairings.count { $0.key == nil },
      keyPairings: status.pairings.count { $0.key != nil },
      eidReplaysRefused: status.eidReplaysRefused, rpaReplaysRefused: status.rpaReplaysRefused,
      irkPairings: status.pairings.count { $0.key?.scheme == .rpa })
    self.droppedAdvertisements = droppedAdvertisements
    self.manufacturerDataOverLimit = manufacturerDataOverLimit
    self.outbox = outbox.map(Outbox.init)
    self.fleet = fleet.map(Fleet.init)
    self.fleetSetAside = fleetSetAside
  }

  /// Seconds since `time`, never negative, to 0.1 s.
  static func ago(_ time: Timestamp?, now: Timestamp) -> Double? {
    time.map { tenths(max(0, now - $0)) }
  }

  static func tenths(_ value: Double) -> Double { (value * 10).rounded() / 10 }
}

extension StatusDocument.Scan {
  public init(_ condition: ScanCondition) {
    switch condition {
    case .starting: self.init(state: .starting)
    case .scanning(let backend): self.init(state: .scanning, backend: backend)
    case .waiting(let backend, let reason): self.init(state: .waiting, backend: backend, detail: reason)
    case .failing(let reason, let retry): self.init(state: .failing, detail: reason, retryInSeconds: retry)
    }
  }
}

// Identity, calibration and health are read from BeaconCore's field lists, which every other
// output (event lines, the `BeaconHealth` signal) writes too, so the status says what they say.
extension StatusDocument.Identity {
  init(_ id: BeaconID) {
    let fields = JSONValue.object(Dictionary(id.jsonFields, uniquingKeysWith: { $1 }))
    self =
      (try? Self(json: fields, path: "")) ?? Self(kind: id.kind, authentication: id.authentication.rawValue)
  }
}

extension StatusDocument.Calibration {
  init(_ id: BeaconID, powerAt1m: Int?) {
    let fields = JSONValue.object(
      Dictionary(id.calibrationFields(powerAt1m: powerAt1m), uniquingKeysWith: { $1 }))
    self = (try? Self(json: fields, path: "")) ?? Self()
  }
}

extension StatusDocument.Health {
  init(_ health: BeaconHealth, now: Timestamp) {
    let fields = JSONValue.object(Dictionary(health.jsonFields(now: now), uniquingKeysWith: { $1 }))
    self =
      (try? Self(json: fields, path: ""))
      ?? Self(
        reboots: health.reboots, batteryLow: health.batteryLow, silent: health.silent,
        possibleClone: health.possibleClone, cloneAddresses: health.cloneAddresses.map(\.description))
  }
}

extension StatusDocument.BeaconInRange {
  init(_ beacon: TrackedBeacon, health: BeaconHealth?, now: Timestamp) {
    address = beacon.address.description
    sightings = beacon.sightings
    proximity = beacon.proximity.rawValue
    identity = .init(beacon.id)
    calibration = .init(beacon.id, powerAt1m: beacon.powerAt1m)
    self.health = .init(health ?? BeaconHealth(), now: now)
    rssi = beacon.lastRSSI
    smoothedRSSI = beacon.smoothedRSSI.map(StatusDocument.tenths)
    distance = beacon.distance.map { ($0 * 100).rounded() / 100 }
  }
}

extension StatusDocument.ActiveBeacon {
  init(_ active: ActiveBeacon) {
    deviceId = active.deviceId
    label = active.pairing.label
    identity = .init(active.id)
    smoothedRSSI = active.smoothedRSSI.map(StatusDocument.tenths)
  }
}

extension StatusDocument.PairedBeacon {
  /// One paired beacon with its health; the fleet's beacon report is cut from it too.
  init(_ paired: PairedBeaconStatus, now: Timestamp) {
    deviceId = paired.pairing.deviceId
    label = paired.pairing.label
    identity = .init(paired.id)
    calibration = .init(paired.id, powerAt1m: paired.powerAt1m)
    inRange = paired.inRange
    lastSeenAgoSeconds = StatusDocument.ago(paired.lastSeen, now: now)
    rssi = paired.lastRSSI
    smoothedRSSI = paired.smoothedRSSI.map(StatusDocument.tenths)
    packetLoss = paired.packetLoss.map { ($0 * 1000).rounded() / 1000 }
    lastRebootAgoSeconds = StatusDocument.ago(paired.health.lastRebootAt, now: now)
    health = .init(paired.health, now: now)
  }
}

extension StatusDocument.Trip {
  public init(_ trip: BridgeStatus.Trip) {
    tripId = trip.tripId
    ended = trip.endedAt != nil
    deviceId = trip.resolution.deviceId
    resolution = trip.resolution.reason
    authentication = trip.resolution.snapshot?.id.authentication.rawValue
    heldBatches = trip.heldBatches
    waitingForEnd = trip.waitingForEnd
  }
}

extension StatusDocument.Outbox {
  public init(_ summary: OutboxSummary) {
    undelivered = summary.undelivered
    deadLetters = summary.deadLetters
    unresolvedTrips = summary.unresolvedTrips
    limit = summary.limit
    oldestAgeSeconds = summary.oldestAge.map { $0.rounded() }
  }
}

extension StatusDocument.Upload {
  init(_ upload: UploadState, now: Timestamp) {
    state =
      upload.consecutiveFailures > 0 ? .failing : upload.lastDeliveredAt == nil ? .idle : .delivering
    delivered = upload.delivered
    deadLettered = upload.deadLettered
    consecutiveFailures = upload.consecutiveFailures
    lastError = upload.lastError
    lastDeliveredAgoSeconds = StatusDocument.ago(upload.lastDeliveredAt, now: now)
    lastFailedAgoSeconds = StatusDocument.ago(upload.lastFailedAt, now: now)
    retryInSeconds = upload.retryAt.map { StatusDocument.tenths(max(0, $0 - now)) }
  }
}

extension StatusDocument.Fleet {
  init(_ state: FleetLinkState) {
    broker = state.broker
    boxId = state.boxId
    connected = state.connected
    lastDesiredVersion = state.lastDesiredVersion
    appliedVersion = state.appliedVersion
    appliedSettings = Dictionary(grouping: state.appliedSettings, by: \.section).mapValues { settings in
      Dictionary(settings.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
    }
    lastProblem = state.lastProblem
  }
}
