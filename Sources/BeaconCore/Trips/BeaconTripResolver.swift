#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Decides each trip's device ID: a snapshot of the active beacon at trip start, a paired beacon
/// that becomes active within `lateWindow`, or the unresolved policy.
public struct BeaconTripResolver: Sendable {
  public var settings: TripSettings

  public struct Trip: Hashable, Sendable {
    public var tripId: TripID
    public var startedAt: Timestamp
    public var resolution: TripResolution
    public var endedAt: Timestamp?
    /// Whether the host's beacon hook asked for a snapshot (beacon/mHub mode).
    public var beaconMode: Bool
  }

  private var trips: [TripID: Trip] = [:]
  /// How many of `trips` are open (not ended), kept as they change rather than counted.
  public private(set) var openTripCount = 0
  /// Pending trips' late-window deadlines, earliest first, so that `nextDeadline` and `expire`
  /// cost O(log n) per trip due rather than a scan of every trip.
  private var deadlines = DeadlineHeap<TripID>()
  /// The stamp of each pending trip's element in force in `deadlines`; a trip is here exactly
  /// while it is pending.
  private var pendingStamps: [TripID: UInt64] = [:]
  /// IDs of trips that ended and were fully handed over, so that a reused ID is refused rather
  /// than restarting its batch sequence. Bounded; the daemon's store keeps the durable record.
  private var finished: [TripID] = []
  private static let finishedMemory = 1024

  public init(settings: TripSettings = TripSettings()) {
    self.settings = settings
  }

  public func trip(_ id: TripID) -> Trip? { trips[id] }

  /// Current and held trips, oldest first.
  public var allTrips: [Trip] {
    trips.values.sorted { ($0.startedAt, $0.tripId) < ($1.startedAt, $1.tripId) }
  }

  /// `tripId` was checked at the door (`TripID`): nothing here checks its text again.
  public mutating func start(_ tripId: TripID, at time: Timestamp) throws(TripError) {
    if let existing = trips[tripId] {
      throw TripError(
        existing.endedAt == nil ? .alreadyStarted : .alreadyEnded,
        existing.endedAt == nil ? "trip \(tripId) has already started" : "trip \(tripId) has already ended")
    }
    guard !finished.contains(tripId) else {
      throw TripError(.alreadyEnded, "trip \(tripId) has already ended")
    }
    guard openTripCount < settings.maxOpenTrips else {
      throw TripError(
        .tooManyOpenTrips,
        "trip \(tripId) not started: \(openTripCount) trips are open, the most [Trips] maxOpenTrips allows; end one with 'trip end', or raise maxOpenTrips"
      )
    }
    openTripCount += 1
    trips[tripId] = Trip(
      tripId: tripId, startedAt: time, resolution: .pending(deadline: time + settings.lateWindow),
      endedAt: nil,
      beaconMode: false)
    queue(tripId, time + settings.lateWindow)
  }

  /// The beacon hook's snapshot (BLEFrameworkProxy.onBeaconTripStart): with an active beacon the
  /// trip resolves at once; otherwise it waits for the late window.
  public mutating func snapshot(_ tripId: TripID, active: ActiveBeacon?, at time: Timestamp)
    -> TripResolution?
  {
    guard var trip = trips[tripId], case .pending = trip.resolution else { return nil }
    trip.beaconMode = true
    if let active {
      trip.resolution = .beacon(BeaconSnapshot(active: active, at: time), late: false)
      settled(tripId)
    }
    trips[tripId] = trip
    return trip.resolution
  }

  /// Called after the host's hook returned. A trip whose hook took no snapshot is a smart-mode
  /// trip: it takes the configured device ID, or the unresolved policy.
  public mutating func hookFinished(_ tripId: TripID, at time: Timestamp) -> TripResolution? {
    guard var trip = trips[tripId], !trip.beaconMode, case .pending = trip.resolution else { return nil }
    if let configured = settings.configuredDeviceId {
      trip.resolution = .configured(deviceId: configured)
    } else {
      trip.resolution = policyResolution()
    }
    settled(tripId)
    trips[tripId] = trip
    return trip.resolution
  }

  /// A paired beacon became active: every beacon-mode trip still pending within its window
  /// resolves to it.
  public mutating func activeChanged(_ active: ActiveBeacon?, at time: Timestamp) -> [(
    TripID, TripResolution
  )] {
    guard let active else { return [] }
    var changed: [(TripID, TripResolution)] = []
    for trip in allTrips where trip.beaconMode {
      guard case .pending(let deadline) = trip.resolution, time <= deadline else { continue }
      let resolution = TripResolution.beacon(BeaconSnapshot(active: active, at: time), late: true)
      trips[trip.tripId]?.resolution = resolution
      settled(trip.tripId)
      changed.append((trip.tripId, resolution))
    }
    return changed
  }

  /// Applies the unresolved policy to trips whose late window has passed, oldest first.
  public mutating func expire(at time: Timestamp) -> [(TripID, TripResolution)] {
    var due: [Trip] = []
    while let top = deadlines.top, !isInForce(top) || Timestamp(seconds: top.deadline) <= time {
      deadlines.pop()
      guard isInForce(top), let trip = trips[top.tag] else { continue }
      due.append(trip)
    }
    guard !due.isEmpty else { return [] }
    var changed: [(TripID, TripResolution)] = []
    for trip in due.sorted(by: { ($0.startedAt, $0.tripId) < ($1.startedAt, $1.tripId) }) {
      let resolution = policyResolution()
      trips[trip.tripId]?.resolution = resolution
      settled(trip.tripId)
      changed.append((trip.tripId, resolution))
    }
    return changed
  }

  /// Ends a trip. A trip still pending takes the unresolved policy now.
  public mutating func end(_ tripId: TripID, at time: Timestamp) throws(TripError) -> (
    resolution: TripResolution, changed: Bool
  ) {
    guard var trip = trips[tripId] else {
      if finished.contains(tripId) { throw TripError(.alreadyEnded, "trip \(tripId) has already ended") }
      throw TripError(.unknownTrip, "no trip \(tripId) has started")
    }
    guard trip.endedAt == nil else { throw TripError(.alreadyEnded, "trip \(tripId) has already ended") }
    trip.endedAt = time
    openTripCount -= 1
    var changed = false
    if case .pending = trip.resolution {
      trip.resolution = policyResolution()
      settled(tripId)
      changed = true
    }
    trips[tripId] = trip
    return (trip.resolution, changed)
  }

  /// Tags an unresolved trip by hand.
  /// `deviceId` was checked at the door (`DeviceID`): nothing here checks it again.
  public mutating func assign(_ tripId: TripID, deviceId: DeviceID) throws(TripError) -> TripResolution {
    guard var trip = trips[tripId] else { throw TripError(.unknownTrip, "no held trip \(tripId)") }
    switch trip.resolution {
    case .unresolved, .pending:
      trip.resolution = .assigned(deviceId: deviceId)
      settled(tripId)
      trips[tripId] = trip
      return trip.resolution
    default:
      throw TripError(
        .alreadyResolved, "trip \(tripId) is already tagged with \(trip.resolution.deviceId?.rawValue ?? "?")"
      )
    }
  }

  /// Puts back a trip a journal kept. A trip that was still pending waits a whole late window
  /// again from `time`; one that ended while pending takes the unresolved policy now.
  public mutating func restore(_ kept: JournaledTrip, at time: Timestamp) -> TripResolution {
    var resolution = kept.resolution
    if case .pending = resolution {
      resolution = kept.ended ? policyResolution() : .pending(deadline: time + settings.lateWindow)
    }
    if let old = trips[kept.tripId], old.endedAt == nil { openTripCount -= 1 }
    if !kept.ended { openTripCount += 1 }
    trips[kept.tripId] = Trip(
      tripId: kept.tripId, startedAt: time, resolution: resolution, endedAt: kept.ended ? time : nil,
      beaconMode: kept.beaconMode)
    if case .pending(let deadline) = resolution { queue(kept.tripId, deadline) } else { settled(kept.tripId) }
    return resolution
  }

  /// Drops a trip that was started but could not be recorded.
  public mutating func forget(_ tripId: TripID) {
    if let old = trips[tripId], old.endedAt == nil { openTripCount -= 1 }
    trips[tripId] = nil
    settled(tripId)
  }

  /// Forgets an ended trip whose batches were all handed over.
  public mutating func retire(_ tripId: TripID) {
    guard let trip = trips[tripId], trip.endedAt != nil, trip.resolution.isFinal else { return }
    trips[tripId] = nil
    finished.append(tripId)
    if finished.count > Self.finishedMemory { finished.removeFirst(finished.count - Self.finishedMemory) }
  }

  /// The earliest late window still open. Mutating: it drops heap elements no longer in force.
  public var nextDeadline: Timestamp? {
    mutating get {
      while let top = deadlines.top, !isInForce(top) { deadlines.pop() }
      return deadlines.top.map { Timestamp(seconds: $0.deadline) }
    }
  }

  /// How many elements the deadline heap holds (tests: bounded by the pending trips).
  var deadlineHeapCount: Int { deadlines.count }

  /// Queues a pending trip's late-window deadline, replacing any it had.
  private mutating func queue(_ tripId: TripID, _ deadline: Timestamp) {
    pendingStamps[tripId] = deadlines.push(deadline.seconds, tripId)
    if deadlines.needsRebuild(live: pendingStamps.count) {
      var fresh: [(deadline: Double, tag: TripID)] = []
      fresh.reserveCapacity(pendingStamps.count)
      for id in pendingStamps.keys {
        guard let trip = trips[id], case .pending(let due) = trip.resolution else { continue }
        fresh.append((due.seconds, id))
      }
      pendingStamps = [:]
      for (item, stamp) in zip(fresh, deadlines.rebuild(fresh)) { pendingStamps[item.tag] = stamp }
    }
  }

  /// A trip is no longer pending: its deadline is out of force.
  private mutating func settled(_ tripId: TripID) { pendingStamps[tripId] = nil }

  @inline(__always)
  private func isInForce(_ element: DeadlineHeap<TripID>.Element) -> Bool {
    pendingStamps[element.tag] == element.stamp
  }

  private func policyResolution() -> TripResolution {
    switch settings.unresolvedPolicy {
    case .hold: return .unresolved
    case .fallback:
      if let id = settings.fallbackDeviceId { return .fallback(deviceId: id) }
      return .unresolved
    }
  }
}
