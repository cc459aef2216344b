import BeaconCore
import Synchronization

/// Bounds the trip events the daemon commits at once: the JSON of every `TripEvents` call in
/// flight counts until the call answers. A batch costs a small multiple of its JSON while it is
/// decoded, stored and answered, so six concurrent 15 MiB batches would otherwise take over a
/// gigabyte. A call past the bound is refused with a sentence (the caller sends it again), never
/// held; after a large batch, the freed memory goes back to the system.
final class TripEventsBudget: Sendable {
  /// 32 MiB: two batches at the 16 MiB cap, or many small ones.
  static let limit = 32 * 1024 * 1024
  /// A batch this large or more hands its memory back when done (`MallocTuning`).
  static let large = 1024 * 1024

  /// One per process: the bound is the process's memory.
  static let shared = TripEventsBudget()

  private let inFlight = Mutex(0)

  /// Counts `bytes` in, or returns the refusal when they do not fit beside the calls in flight.
  func reserve(_ bytes: Int) -> String? {
    inFlight.withLock { used -> String? in
      guard used == 0 || used + bytes <= Self.limit else {
        return
          "TripEvents: \(InputReader.size(used)) of trip events are being committed already, and this batch's \(InputReader.size(bytes)) would pass the \(InputReader.size(Self.limit)) the daemon commits at once; nothing of it was taken: send it again once the calls in flight have answered"
      }
      used += bytes
      return nil
    }
  }

  func release(_ bytes: Int) {
    inFlight.withLock { $0 -= bytes }
    if bytes >= Self.large { MallocTuning.returnFreedMemory() }
  }
}
