/// The beacon a trip was resolved from, as it was at the moment it resolved the trip.
public struct BeaconSnapshot: Hashable, Sendable {
  public var id: BeaconID
  public var deviceId: DeviceID
  public var label: String?
  public var smoothedRSSI: Double?
  public var lastRSSI: Int?
  public var distance: Double?
  public var proximity: Proximity
  /// When the snapshot was taken.
  public var takenAt: Timestamp

  public init(
    id: BeaconID, deviceId: DeviceID, label: String?, smoothedRSSI: Double?, lastRSSI: Int?,
    distance: Double?,
    proximity: Proximity, takenAt: Timestamp
  ) {
    self.id = id
    self.deviceId = deviceId
    self.label = label
    self.smoothedRSSI = smoothedRSSI
    self.lastRSSI = lastRSSI
    self.distance = distance
    self.proximity = proximity
    self.takenAt = takenAt
  }

  public init(active: ActiveBeacon, at time: Timestamp) {
    id = active.id
    deviceId = active.deviceId
    label = active.pairing.label
    smoothedRSSI = active.smoothedRSSI
    lastRSSI = active.lastRSSI
    distance = active.distance
    proximity = active.proximity
    takenAt = time
  }
}

/// How a trip got its device ID, or why it has none.
public enum TripResolution: Hashable, Sendable {
  /// Waiting for a paired beacon to become active, until `deadline`.
  case pending(deadline: Timestamp)
  /// A beacon snapshot resolved it (at trip start or within the late window).
  case beacon(BeaconSnapshot, late: Bool)
  /// No beacon; `unresolvedPolicy=fallback` supplied the device ID.
  case fallback(deviceId: DeviceID)
  /// A smart-mode host (no beacon hook) uses its configured device ID.
  case configured(deviceId: DeviceID)
  /// Assigned by hand later (`trip assign`).
  case assigned(deviceId: DeviceID)
  /// No device ID: batches are held, durable, until assigned.
  case unresolved

  public var deviceId: DeviceID? {
    switch self {
    case .pending, .unresolved: nil
    case .beacon(let s, _): s.deviceId
    case .fallback(let d), .configured(let d), .assigned(let d): d
    }
  }

  public var snapshot: BeaconSnapshot? {
    if case .beacon(let s, _) = self { return s }
    return nil
  }

  /// A short word for logs and JSON: pending, activeAtStart, lateArrival, fallback, configured,
  /// assigned, unresolved.
  public var reason: String {
    switch self {
    case .pending: "pending"
    case .beacon(_, let late): late ? "lateArrival" : "activeAtStart"
    case .fallback: "fallback"
    case .configured: "configured"
    case .assigned: "assigned"
    case .unresolved: "unresolved"
    }
  }

  public var isFinal: Bool {
    switch self {
    case .pending, .unresolved: false
    default: true
    }
  }
}

/// A batch of trip events as the recorder handed it over, before tagging.
public struct TripEventBatch: Hashable, Sendable {
  /// The most JSON text one batch of events may have, in bytes: the CLI's `trip events` cap and
  /// the daemon's `TripEvents`, checked on the length before the text is decoded, so
  /// that a huge batch costs neither the decoding nor the memory of its values.
  public static let maximumJSONBytes = 16 << 20

  /// The sentence refusing a batch of `count` bytes of JSON, or nil when it is within the cap.
  public static func refusal(jsonBytes count: Int) -> String? {
    guard count > maximumJSONBytes else { return nil }
    return
      "the events are \(count) bytes of JSON, over the 16 MiB (\(maximumJSONBytes) bytes) one batch may have; send them in smaller batches"
  }

  public var tripId: TripID
  /// Position within the trip, from 0; order is kept within a trip.
  public var sequence: Int
  public var events: [TripEvent]
  /// When the bridge received it.
  public var receivedAt: Timestamp

  public init(tripId: TripID, sequence: Int, events: [TripEvent], receivedAt: Timestamp) {
    self.tripId = tripId
    self.sequence = sequence
    self.events = events
    self.receivedAt = receivedAt
  }
}

/// A batch tagged with its trip's device ID and beacon snapshot: what reaches
/// `ScopeHost.postTripEventBatch`.
public struct TaggedTripBatch: Hashable, Sendable {
  public var batch: TripEventBatch
  public var deviceId: DeviceID
  public var resolution: TripResolution

  public init(batch: TripEventBatch, deviceId: DeviceID, resolution: TripResolution) {
    self.batch = batch
    self.deviceId = deviceId
    self.resolution = resolution
  }

  public var tripId: TripID { batch.tripId }
  public var sequence: Int { batch.sequence }
  public var events: [TripEvent] { batch.events }
  public var beacon: BeaconSnapshot? { resolution.snapshot }

  /// A stable key for this batch, so the upload layer can de-duplicate retries. For display; the
  /// upload sends `validatedIdempotencyKey()`.
  public var idempotencyKey: String { "\(batch.tripId)#\(batch.sequence)" }

  /// `<tripId>#<sequence>` from validated parts: the trip ID is a `TripID` (visible ASCII, so an
  /// HTTP header carries it unchanged) and the sequence must be 0 or more. A batch whose sequence
  /// is negative must not be sent.
  public func validatedIdempotencyKey() throws(IdentifierError) -> String {
    guard batch.sequence >= 0 else {
      throw IdentifierError(field: "batch sequence", value: String(batch.sequence), rule: "must be 0 or more")
    }
    return "\(batch.tripId.rawValue)#\(batch.sequence)"
  }
}
