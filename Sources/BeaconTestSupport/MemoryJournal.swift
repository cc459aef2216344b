import BeaconCore
import Synchronization

/// A `TripJournal` in memory, for tests: it survives a `BeaconBridge` being thrown away (the
/// test's "crash"), can refuse batches beyond a bound, and can fail writes on demand.
public final class MemoryJournal: TripJournal {
  public struct Full: Error, CustomStringConvertible {
    public var description: String { "the journal is full" }
  }

  private struct Trip {
    var resolution: TripResolution?
    var beaconMode = true
    var ended = false
    var batches: [TripEventBatch] = []
    var next = 0
  }

  private struct State {
    var trips: [TripID: Trip] = [:]
    var order: [TripID] = []
    var dead: [(TripID, Int, String)] = []
    var limit: Int
  }

  private let state: Mutex<State>

  public init(limit: Int = .max) {
    state = Mutex(State(limit: limit))
  }

  public var undelivered: Int { state.withLock { $0.trips.values.reduce(0) { $0 + $1.batches.count } } }
  public var tripIds: [TripID] { state.withLock { $0.order } }
  public var deadLetters: [(TripID, Int, String)] { state.withLock { $0.dead } }

  public func load() async throws -> [JournaledTrip] {
    state.withLock { s in
      s.order.compactMap { id in
        guard let t = s.trips[id] else { return nil }
        return JournaledTrip(
          tripId: id, resolution: t.resolution ?? .pending(deadline: .zero), beaconMode: t.beaconMode,
          ended: t.ended,
          batches: t.batches, nextSequence: t.next)
      }
    }
  }

  public func recordTripStarted(_ tripId: TripID) async throws {
    state.withLock {
      $0.trips[tripId] = Trip()
      $0.order.append(tripId)
    }
  }

  public func recordBatch(_ batch: TripEventBatch) async throws {
    try state.withLock { s in
      let total = s.trips.values.reduce(0) { $0 + $1.batches.count }
      guard total < s.limit else { throw Full() }
      s.trips[batch.tripId]?.batches.append(batch)
      s.trips[batch.tripId]?.next = batch.sequence + 1
    }
  }

  public func recordResolution(_ tripId: TripID, _ resolution: TripResolution, beaconMode: Bool) async throws
  {
    state.withLock {
      $0.trips[tripId]?.resolution = resolution
      $0.trips[tripId]?.beaconMode = beaconMode
    }
  }

  public func recordDelivered(_ tripId: TripID, sequence: Int) async throws {
    state.withLock { $0.trips[tripId]?.batches.removeAll { $0.sequence == sequence } }
  }

  public func recordDeadLetter(_ tripId: TripID, sequence: Int, reason: String) async throws {
    state.withLock {
      $0.trips[tripId]?.batches.removeAll { $0.sequence == sequence }
      $0.dead.append((tripId, sequence, reason))
    }
  }

  public func recordTripEnded(_ tripId: TripID) async throws {
    state.withLock { $0.trips[tripId]?.ended = true }
  }

  public func recordRetired(_ tripId: TripID) async throws {
    state.withLock {
      $0.trips[tripId] = nil
      $0.order.removeAll { $0 == tripId }
    }
  }
}
