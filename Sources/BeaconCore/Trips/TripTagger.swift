/// Tags every batch with its trip's device ID and beacon snapshot, and holds the batches of a
/// trip that has none yet, in order, until it has.
public struct TripTagger: Sendable {
  private var held: [TripID: [TripEventBatch]] = [:]
  private var nextSequence: [TripID: Int] = [:]

  public init() {}

  /// The sequence number the trip's next batch will get.
  public func peekSequence(_ tripId: TripID) -> Int { nextSequence[tripId, default: 0] }

  /// Takes a batch already numbered (by `peekSequence`) and journaled.
  public mutating func accept(_ batch: TripEventBatch, resolution: TripResolution) -> [TaggedTripBatch] {
    nextSequence[batch.tripId] = max(nextSequence[batch.tripId, default: 0], batch.sequence + 1)
    held[batch.tripId, default: []].append(batch)
    return release(batch.tripId, resolution: resolution)
  }

  /// Puts back what a journal kept: undelivered batches, in order, and the next sequence number.
  public mutating func restore(_ tripId: TripID, batches: [TripEventBatch], nextSequence next: Int) {
    held[tripId] = batches.isEmpty ? nil : batches.sorted { $0.sequence < $1.sequence }
    nextSequence[tripId] = max(next, (batches.map(\.sequence).max() ?? -1) + 1)
  }

  /// Tags and hands over every held batch of a trip, in order, once it is resolved.
  public mutating func release(_ tripId: TripID, resolution: TripResolution) -> [TaggedTripBatch] {
    guard resolution.isFinal, let deviceId = resolution.deviceId, let batches = held[tripId] else {
      return []
    }
    held[tripId] = nil
    return batches.map { TaggedTripBatch(batch: $0, deviceId: deviceId, resolution: resolution) }
  }

  /// Batches waiting for a device ID.
  public func heldBatches(_ tripId: TripID) -> [TripEventBatch] { held[tripId] ?? [] }

  public func hasHeld(_ tripId: TripID) -> Bool { !(held[tripId]?.isEmpty ?? true) }

  public mutating func forget(_ tripId: TripID) {
    held[tripId] = nil
    nextSequence[tripId] = nil
  }
}
