import BeaconCore
import BlueZ

/// The daemon's side of the contract: a `StatusDocument` from the bridge's state and what the
/// service knows besides. Ages are measured from the snapshot's `now` and rounded by `Rounding`.
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
    beaconsInRange = status.beaconsInRange.map { ReportedBeacon($0, health: status.health[$0.id], now: now) }
    activeBeacon = status.active.map(ReportedSnapshot.init(statusOf:))
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

}

extension StatusDocument.Scan {
  public init(_ condition: ScanCondition) {
    switch condition {
    case .starting: self.init(state: .starting)
    case .scanning(let backend): self.init(state: .scanning, backend: backend)
    case .waiting(let backend, let wait):
      self.init(state: .waiting, backend: backend, detail: wait.description, reason: wait.reason)
    case .failing(let reason, let retry): self.init(state: .failing, detail: reason, retryInSeconds: retry)
    }
  }
}

extension StatusDocument.PairedBeacon {
  /// One paired beacon with its health; the fleet's beacon report is cut from it too.
  init(_ paired: PairedBeaconStatus, now: Timestamp) {
    deviceId = paired.pairing.deviceId
    label = paired.pairing.label
    identity = ReportedIdentity(paired.id)
    calibration = ReportedCalibration(paired.id, powerAt1m: paired.powerAt1m)
    inRange = paired.inRange
    lastSeenAgoSeconds = Rounding.ago(paired.lastSeen, now: now)
    rssi = paired.lastRSSI
    smoothedRSSI = paired.smoothedRSSI.map(Rounding.tenths)
    packetLoss = paired.packetLoss.map(Rounding.thousandths)
    lastRebootAgoSeconds = Rounding.ago(paired.health.lastRebootAt, now: now)
    health = ReportedHealth(paired.health, now: now)
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
    lastDeliveredAgoSeconds = Rounding.ago(upload.lastDeliveredAt, now: now)
    lastFailedAgoSeconds = Rounding.ago(upload.lastFailedAt, now: now)
    retryInSeconds = upload.retryAt.map { Rounding.tenths(max(0, $0 - now)) }
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
