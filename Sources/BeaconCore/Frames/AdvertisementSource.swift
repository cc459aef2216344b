/// Where advertisements come from: BlueZ over D-Bus, raw HCI, a btsnoop replay, the demo's
/// simulated radio, or a test's MockAdapter.
public protocol AdvertisementSource: Sendable {
  /// Human name of the backend, e.g. "bluez (active discovery)".
  var description: String { get }
  /// Starts receiving; the stream ends (or throws) when the source stops. Cancelling the consumer stops scanning.
  func events() async throws -> AsyncThrowingStream<SourceEvent, any Error>
  /// The same events in the arrays the backend read them in (one D-Bus read pass, say). A
  /// consumer that takes an array at a time pays the stream's hand-over once per array instead
  /// of once per advertisement, which at thousands a second is most of its cost. The default
  /// wraps each event of `events()` in an array of one.
  func eventBatches() async throws -> AsyncThrowingStream<[SourceEvent], any Error>
  /// Runs the source in the caller's isolation: starts it (throwing what `eventBatches()` would),
  /// calls `started`, then hands each array to `deliver` until the source ends (returns) or fails
  /// (throws). Cancelling the calling task stops it.
  ///
  /// The consumer of a busy source wants this form. A stream between the source and its consumer
  /// costs a task of its own and a thread hop per array; here a source that reads on a thread of
  /// its own resumes the caller, on the caller's actor, once per array, and the consumer's work
  /// runs in that same job. The default drives `eventBatches()`.
  func run(
    isolation: isolated (any Actor)?, started: () -> Void, deliver: ([SourceEvent]) async -> Void
  ) async throws
  /// Returns once a stopped source has put the radio back (StopDiscovery, scan disabled). A
  /// process about to exit awaits it, or the cleanup would die with it.
  func finished() async
}

extension AdvertisementSource {
  public func finished() async {}

  public func run(
    isolation: isolated (any Actor)?, started: () -> Void, deliver: ([SourceEvent]) async -> Void
  ) async throws {
    let batches = try await eventBatches()
    started()
    for try await batch in batches { await deliver(batch) }
  }

  public func eventBatches() async throws -> AsyncThrowingStream<[SourceEvent], any Error> {
    let events = try await events()
    let (stream, continuation) = AsyncThrowingStream.makeStream(of: [SourceEvent].self)
    let task = Task {
      do {
        for try await event in events { continuation.yield([event]) }
        continuation.finish()
      } catch {
        continuation.finish(throwing: error)
      }
    }
    continuation.onTermination = { _ in task.cancel() }
    return stream
  }

  /// `events()` for a source whose own form is arrays: the arrays, one event at a time.
  public static func flatten(_ batches: AsyncThrowingStream<[SourceEvent], any Error>)
    -> AsyncThrowingStream<SourceEvent, any Error>
  {
    let (stream, continuation) = AsyncThrowingStream.makeStream(of: SourceEvent.self)
    let task = Task {
      do {
        for try await batch in batches {
          for event in batch { continuation.yield(event) }
        }
        continuation.finish()
      } catch {
        continuation.finish(throwing: error)
      }
    }
    continuation.onTermination = { _ in task.cancel() }
    return stream
  }

  /// `finished()`, but never longer than `timeout`: a process on its way out must not hang on a
  /// radio that does not answer. (A task group would wait for the stuck child; this does not.)
  public func finished(within timeout: Duration) async {
    let once = ResumeOnce<Void, Never>()
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      once.arm(continuation)
      Task {
        await self.finished()
        once.resume()
      }
      Task {
        try? await Task.sleep(for: timeout)
        once.resume()
      }
    }
  }
}
