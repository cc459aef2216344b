// The trip calls: start, the beacon hook's snapshot, batches, end, assign, restore and retire.
// What they return is tagged through `tagged`, beside the pipeline's other steps.
extension BeaconPipeline {
  public mutating func startTrip(_ tripId: TripID, at time: Timestamp) throws(TripError) -> [Step] {
    try resolver.start(tripId, at: time)
    return [.event(.tripStarted(tripId: tripId))]
  }

  /// The beacon hook's snapshot for a trip.
  public mutating func snapshotActiveBeacon(for tripId: TripID, at time: Timestamp) -> (
    BeaconSnapshot?, [Step]
  ) {
    guard let resolution = resolver.snapshot(tripId, active: selector.active, at: time) else {
      return (resolver.trip(tripId)?.resolution.snapshot, [])
    }
    guard resolution.isFinal else { return (nil, []) }
    return (resolution.snapshot, tagged(tripId, resolution))
  }

  /// The host's hook returned; a trip it took no snapshot for is a smart-mode trip.
  public mutating func hookFinished(for tripId: TripID, at time: Timestamp) -> [Step] {
    guard let resolution = resolver.hookFinished(tripId, at: time) else { return [] }
    return tagged(tripId, resolution)
  }

  /// Numbers a batch for a running trip, without taking it yet (so it can be journaled first).
  public func numberBatch(_ tripId: TripID, events: [TripEvent], at time: Timestamp) throws(TripError)
    -> TripEventBatch
  {
    guard let trip = resolver.trip(tripId) else {
      throw TripError(.unknownTrip, "no trip \(tripId) has started")
    }
    guard trip.endedAt == nil else { throw TripError(.alreadyEnded, "trip \(tripId) has already ended") }
    return TripEventBatch(
      tripId: tripId, sequence: tagger.peekSequence(tripId), events: events, receivedAt: time)
  }

  /// Takes a numbered batch: tagged and posted when its trip has a device ID, held otherwise.
  public mutating func tripEvents(_ batch: TripEventBatch) throws(TripError) -> [Step] {
    guard let trip = resolver.trip(batch.tripId) else {
      throw TripError(.unknownTrip, "no trip \(batch.tripId) has started")
    }
    guard trip.endedAt == nil else {
      throw TripError(.alreadyEnded, "trip \(batch.tripId) has already ended")
    }
    let released = tagger.accept(batch, resolution: trip.resolution)
    if released.isEmpty {
      return [.event(.batchHeld(batch, reason: trip.resolution.reason))]
    }
    return released.map { .post($0) }
  }

  /// Puts back what a journal kept. Resolved trips' batches come back as posts, in order.
  ///
  /// `trips` is oldest first (as `TripJournal.load` gives them). When more of them are open than
  /// `[Trips] maxOpenTrips` allows, the oldest open ones are ended here, as `trip end` would end
  /// them (a pending trip takes the unresolved policy; its batches are kept and go where that
  /// sends them), so that a journal never restores more open trips than the bound: the steps
  /// carry their `tripEnded` events, which the bridge journals.
  public mutating func restore(_ trips: [JournaledTrip], at time: Timestamp) -> [Step] {
    var steps: [Step] = []
    for kept in trips {
      let resolution = resolver.restore(kept, at: time)
      tagger.restore(kept.tripId, batches: kept.batches, nextSequence: kept.nextSequence)
      steps += tagger.release(kept.tripId, resolution: resolution).map { .post($0) }
    }
    var excess = resolver.openTripCount - configuration.trips.maxOpenTrips
    for kept in trips where excess > 0 && resolver.trip(kept.tripId)?.endedAt == nil {
      guard let ended = try? endTrip(kept.tripId, at: time) else { continue }
      steps += ended
      excess -= 1
    }
    return steps
  }

  /// Drops a trip whose start could not be recorded.
  public mutating func cancelTrip(_ tripId: TripID) {
    resolver.forget(tripId)
    tagger.forget(tripId)
  }

  /// Whether a trip is gone (retired).
  public func isRetired(_ tripId: TripID) -> Bool { resolver.trip(tripId) == nil }

  public mutating func endTrip(_ tripId: TripID, at time: Timestamp) throws(TripError) -> [Step] {
    let (resolution, changed) = try resolver.end(tripId, at: time)
    var steps: [Step] = changed ? tagged(tripId, resolution) : []
    steps.append(.event(.tripEnded(tripId: tripId, resolution)))
    return steps
  }

  /// Tags a held, unresolved trip by hand (`trip assign`).
  public mutating func assign(_ tripId: TripID, deviceId: DeviceID, at time: Timestamp) throws(TripError)
    -> [Step]
  {
    let resolution = try resolver.assign(tripId, deviceId: deviceId)
    return tagged(tripId, resolution)
  }

  /// Forgets an ended trip once nothing of it is held or waiting to be posted.
  public mutating func retireIfDone(_ tripId: TripID, outstanding: Bool) {
    guard !outstanding, !tagger.hasHeld(tripId) else { return }
    resolver.retire(tripId)
    if resolver.trip(tripId) == nil { tagger.forget(tripId) }
  }
}
