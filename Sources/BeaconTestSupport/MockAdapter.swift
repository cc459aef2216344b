import BeaconCore
import Synchronization

/// A scripted advertisement source for the core's unit tests: the test pushes sightings and
/// losses, and the bridge consumes them through the same `AdvertisementSource` API as BlueZ.
public final class MockAdapter: AdvertisementSource {
  private let state = Mutex<
    (continuation: AsyncThrowingStream<SourceEvent, any Error>.Continuation?, started: Int)
  >(
    (nil, 0))
  public let description = "mock adapter"

  public init() {}

  /// How many times a consumer started it.
  public var startCount: Int { state.withLock { $0.started } }

  /// Hands on each event the test emits, until the test finishes it or the caller is cancelled.
  public func run(
    isolation: isolated (any Actor)?, started: () -> Void, deliver: ([SourceEvent]) async -> Void
  ) async throws {
    let (stream, continuation) = AsyncThrowingStream.makeStream(
      of: SourceEvent.self, throwing: (any Error).self)
    state.withLock {
      $0.continuation = continuation
      $0.started += 1
    }
    started()
    for try await event in stream { await deliver([event]) }
  }

  /// Delivers one event to the consumer. Returns false when nobody is listening.
  @discardableResult
  public func emit(_ event: SourceEvent) -> Bool {
    guard let continuation = state.withLock({ $0.continuation }) else { return false }
    if case .enqueued = continuation.yield(event) { return true }
    return false
  }

  /// Ends the stream, as a backend that stopped would.
  public func finish(throwing error: (any Error)? = nil) {
    let continuation = state.withLock { $0.continuation }
    continuation?.finish(throwing: error)
  }
}
