/// A snapshot of the bridge's state, for `status`.
public struct BridgeStatus: Hashable, Sendable {
  public struct Trip: Hashable, Sendable {
    public var tripId: TripID
    public var startedAt: Timestamp
    public var endedAt: Timestamp?
    public var resolution: TripResolution
    public var heldBatches: Int
    /// Batches tagged and committed, waiting for the trip's end (`sending = postTrip`).
    public var waitingForEnd: Int
  }

  public var armed: Bool
  public var beaconsInRange: [TrackedBeacon]
  public var active: ActiveBeacon?
  public var trips: [Trip]
  public var outboundBatches: Int
  public var pairings: [Pairing]
  /// The bridge's time when the snapshot was taken (ages are measured from it).
  public var now: Timestamp = .zero
  /// What beacons said about themselves (TLM, URL), by beacon.
  public var health: [BeaconID: BeaconHealth] = [:]
  /// Every paired beacon heard since the bridge started, with its health.
  public var pairedBeacons: [PairedBeaconStatus] = []
  /// Frames of known kinds that are not decoded, counted by `IgnoredFrame.kind`.
  public var ignoredFrames: [String: Int] = [:]
  /// How posting to the host has gone since the bridge started.
  public var upload = UploadState()
  /// Replayed Eddystone-EIDs refused since the bridge started (doctor warns).
  public var eidReplaysRefused = 0
  /// Replayed resolvable private addresses refused since the bridge started (doctor warns).
  public var rpaReplaysRefused = 0
}

/// How posting batches to the host has gone since the bridge started: what `status` shows as
/// `upload` and doctor turns into its "delivery" check. The host's own error text is kept, so an
/// MQTT broker's refusal or an HTTP status reads as the sink said it.
public struct UploadState: Hashable, Sendable {
  /// Batches the host took since the bridge started.
  public var delivered = 0
  /// When the host last took a batch.
  public var lastDeliveredAt: Timestamp?
  /// Failed posts since the last one that went through (0 when the last post went through).
  public var consecutiveFailures = 0
  /// The host's error for the last failed post; nil once a post goes through again.
  public var lastError: String?
  /// When the last failed post happened.
  public var lastFailedAt: Timestamp?
  /// When the next attempt is due while failing.
  public var retryAt: Timestamp?
  /// Batches the host refused for good since the bridge started.
  public var deadLettered = 0

  public init() {}
}

/// One paired beacon as `status` shows it: presence, signal, and what it said about itself.
public struct PairedBeaconStatus: Hashable, Sendable {
  public var id: BeaconID
  public var pairing: Pairing
  public var inRange: Bool
  /// The last sighting of its identity (or of its linked TLM).
  public var lastSeen: Timestamp?
  public var lastRSSI: Int?
  public var smoothedRSSI: Double?
  public var powerAt1m: Int?
  /// Packet loss as presence estimates it (`PresenceTracker.packetLoss`); nil out of range.
  public var packetLoss: Double?
  public var health: BeaconHealth
}

extension BeaconPipeline {
  /// Every paired beacon in range, departed, or with health on record, by identity.
  public var pairedBeacons: [PairedBeaconStatus] {
    var out: [BeaconID: PairedBeaconStatus] = [:]
    for b in tracker.inRange {
      guard let pairing = pairings.pairing(for: b.id) else { continue }
      out[b.id] = PairedBeaconStatus(
        id: b.id, pairing: pairing, inRange: true, lastSeen: b.lastSeen, lastRSSI: b.lastRSSI,
        smoothedRSSI: b.smoothedRSSI, powerAt1m: b.powerAt1m, packetLoss: tracker.packetLoss(b.id),
        health: health.health[b.id] ?? BeaconHealth())
    }
    for (id, lastSeen) in health.departedLastSeen where out[id] == nil {
      guard let pairing = pairings.pairing(for: id) else { continue }
      out[id] = PairedBeaconStatus(
        id: id, pairing: pairing, inRange: false, lastSeen: lastSeen, lastRSSI: nil, smoothedRSSI: nil,
        powerAt1m: nil, packetLoss: nil, health: health.health[id] ?? BeaconHealth())
    }
    for (id, entry) in health.health where out[id] == nil {
      guard let pairing = pairings.pairing(for: id) else { continue }
      out[id] = PairedBeaconStatus(
        id: id, pairing: pairing, inRange: false, lastSeen: entry.telemetry?.heardAt, lastRSSI: nil,
        smoothedRSSI: nil, powerAt1m: nil, packetLoss: nil, health: entry)
    }
    return out.values.sorted { $0.id < $1.id }
  }
}
