#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// A durable record of trips and their batches, so that nothing a caller handed over is lost to
/// a crash or a power cut. The bridge writes to it before the call that gave it a batch returns,
/// and reads it back when it starts. The daemon's journal is its SQLite outbox; a library user
/// who wants durability passes their own (or the daemon's), and one who passes none keeps
/// everything in memory.
public protocol TripJournal: Sendable {
  /// What a previous run left: trips not yet retired, with their undelivered batches in order.
  func load() async throws -> [JournaledTrip]
  func recordTripStarted(_ tripId: TripID) async throws
  /// Must be durable when it returns. Throwing refuses the batch (for example `JournalFull`).
  func recordBatch(_ batch: TripEventBatch) async throws
  func recordResolution(_ tripId: TripID, _ resolution: TripResolution, beaconMode: Bool) async throws
  func recordDelivered(_ tripId: TripID, sequence: Int) async throws
  func recordDeadLetter(_ tripId: TripID, sequence: Int, reason: String) async throws
  func recordTripEnded(_ tripId: TripID) async throws
  /// The trip ended and everything of it was delivered: its record may go.
  func recordRetired(_ tripId: TripID) async throws
  /// What the last `load` kept but could not give back (a row another version wrote whose trip
  /// ID or device ID breaks its type's rule), one sentence each: the bridge logs them.
  func loadNotices() async -> [String]
}

extension TripJournal {
  public func loadNotices() async -> [String] { [] }
}

/// A journal that keeps the outbound queue itself (the daemon's store): the bridge then holds no
/// queued batch in memory but the one it posts, and reads the queue a window at a time, in order.
/// A batch enters the queue (`recordQueued`) once its trip is tagged; it is due at once in
/// realtime mode, or waits for its trip's end (`recordDue`) in postTrip mode. `load` then gives
/// only the batches not yet queued (held for a device ID), and counts the queued ones.
public protocol QueueJournal: TripJournal {
  /// Tagged batches enter the queue, in order: due now, or waiting for their trip's end.
  func recordQueued(_ batches: [QueuedBatchKey], due: Bool) async throws
  /// A trip's waiting batches become due.
  func recordDue(_ tripId: TripID) async throws
  /// Up to `limit` due batches, oldest first: read through an index, never a scan of the queue.
  func dueWindow(limit: Int) async throws -> [QueuedBatchKey]
  /// One queued batch, its events as received; nil when it is no longer queued.
  func queuedBatch(_ key: QueuedBatchKey) async throws -> TripEventBatch?
}

/// A batch in a `QueueJournal`'s queue.
public struct QueuedBatchKey: Hashable, Sendable {
  public var tripId: TripID
  public var sequence: Int
  public init(tripId: TripID, sequence: Int) {
    self.tripId = tripId
    self.sequence = sequence
  }
}

/// A trip as the journal kept it.
public struct JournaledTrip: Hashable, Sendable {
  public var tripId: TripID
  /// `.pending` for a trip still waiting for its beacon (its late window restarts on load).
  public var resolution: TripResolution
  public var beaconMode: Bool
  public var ended: Bool
  /// Undelivered batches, in sequence order: with a `QueueJournal`, only those not yet queued.
  public var batches: [TripEventBatch]
  /// The next sequence number (one past the highest ever given, delivered or not).
  public var nextSequence: Int
  /// With a `QueueJournal`: the trip's batches in the queue (left there, not loaded), and how
  /// many of them wait for the trip's end.
  public var queued: Int
  public var waiting: Int

  public init(
    tripId: TripID, resolution: TripResolution, beaconMode: Bool, ended: Bool, batches: [TripEventBatch],
    nextSequence: Int, queued: Int = 0, waiting: Int = 0
  ) {
    self.tripId = tripId
    self.resolution = resolution
    self.beaconMode = beaconMode
    self.ended = ended
    self.batches = batches
    self.nextSequence = nextSequence
    self.queued = queued
    self.waiting = waiting
  }
}

/// Thrown by `ScopeHost.postTripEventBatch` when the backend refused a batch for good (an HTTP
/// 4xx other than 408 and 429): retrying cannot help. The bridge moves the batch to the dead
/// letters and goes on with the next one.
public struct PermanentPostFailure: Error, Hashable, Sendable, CustomStringConvertible {
  public var reason: String
  public init(_ reason: String) { self.reason = reason }
  public var description: String { reason }
}

/// Thrown by `ScopeHost.postTripEventBatch` for a failure worth retrying (network error, 5xx,
/// 408, 429), optionally with the server's `Retry-After`. Any other error is retried too; this one
/// only carries the hint.
public struct RetryablePostFailure: Error, Hashable, Sendable, CustomStringConvertible {
  public var reason: String
  /// Seconds the server asked to wait.
  public var retryAfter: Double?
  public init(_ reason: String, retryAfter: Double? = nil) {
    self.reason = reason
    self.retryAfter = retryAfter
  }
  public var description: String { reason }
}

extension TripResolution {
  /// The journal's form of a resolution.
  public var journalJSON: JSONValue {
    var fields: [String: JSONValue] = ["reason": .string(reason)]
    if let deviceId { fields["deviceId"] = .string(deviceId.rawValue) }
    if let s = snapshot {
      var snap: [String: JSONValue] = [
        "deviceId": .string(s.deviceId.rawValue), "proximity": .string(s.proximity.rawValue),
        "takenAt": .double(s.takenAt.seconds),
      ]
      for (key, value) in ReportedIdentity(s.id).fields { snap[key] = value }
      if let label = s.label { snap["label"] = .string(label) }
      if let v = s.smoothedRSSI { snap["smoothedRssi"] = .double(v) }
      if let v = s.lastRSSI { snap["rssi"] = .int(Int64(v)) }
      if let v = s.distance { snap["distance"] = .double(v) }
      fields["snapshot"] = .object(snap)
    }
    return .object(fields)
  }

  /// Reads the journal's form back; nil when it is not one. A pending trip's window restarts at
  /// `now`. A device ID that breaks `DeviceID`'s rule (one a journal written by another version
  /// might hold) throws its refusal rather than reading as another resolution.
  public init?(journalJSON json: JSONValue, now: Timestamp, lateWindow: Double) throws(IdentifierError) {
    guard let reason = json["reason"]?.stringValue else { return nil }
    let deviceId = try json["deviceId"]?.stringValue.map { (text) throws(IdentifierError) in
      try DeviceID(text)
    }
    switch reason {
    case "pending": self = .pending(deadline: now + lateWindow)
    case "unresolved": self = .unresolved
    case "fallback":
      guard let deviceId else { return nil }
      self = .fallback(deviceId: deviceId)
    case "configured":
      guard let deviceId else { return nil }
      self = .configured(deviceId: deviceId)
    case "assigned":
      guard let deviceId else { return nil }
      self = .assigned(deviceId: deviceId)
    case "activeAtStart", "lateArrival":
      guard let snap = json["snapshot"], let snapshot = try BeaconSnapshot(journalJSON: snap) else {
        return nil
      }
      self = .beacon(snapshot, late: reason == "lateArrival")
    default: return nil
    }
  }
}

extension BeaconSnapshot {
  init?(journalJSON json: JSONValue) throws(IdentifierError) {
    guard let deviceText = json["deviceId"]?.stringValue, let kind = json["kind"]?.stringValue else {
      return nil
    }
    let deviceId = try DeviceID(deviceText)
    let id: BeaconID
    switch kind {
    case "iBeacon", "altBeacon":
      guard let uuidText = json["uuid"]?.stringValue, let uuid = UUID(uuidString: uuidText),
        let major = json["major"]?.intValue, let minor = json["minor"]?.intValue,
        let m = UInt16(exactly: major), let n = UInt16(exactly: minor)
      else { return nil }
      let identity = BeaconIdentity(uuid: uuid, major: m, minor: n)
      id = kind == "iBeacon" ? .iBeacon(identity) : .altBeacon(identity)
    case "eddystoneUID":
      guard let ns = json["namespace"]?.stringValue.flatMap(Hex.decode),
        let inst = json["instance"]?.stringValue.flatMap(Hex.decode)
      else { return nil }
      id = .eddystone(namespace: ns, instance: inst)
    case "eddystoneEID", "resolvablePrivateAddress":
      guard let pairing = json["pairing"]?.intValue else { return nil }
      id = .keyed(KeyedIdentity(scheme: kind == "eddystoneEID" ? .eid : .rpa, pairing: pairing))
    default: return nil
    }
    self.init(
      id: id, deviceId: deviceId, label: json["label"]?.stringValue,
      smoothedRSSI: json["smoothedRssi"]?.doubleValue,
      lastRSSI: json["rssi"]?.intValue.map { Int($0) }, distance: json["distance"]?.doubleValue,
      proximity: json["proximity"]?.stringValue.flatMap(Proximity.init(rawValue:)) ?? .unknown,
      takenAt: Timestamp(seconds: json["takenAt"]?.doubleValue ?? 0))
  }
}
