import BeaconCore

extension AdvertisementSource {
  /// What `run` hands on, one event at a time, for a test that reads a source as a stream.
  ///
  /// Throws what `run` throws before it calls `started` (no bus, no such adapter). After that a
  /// failure ends the stream with the error, and the source returning finishes it. The stream's
  /// end (its consumer cancelled, or the stream dropped) cancels the run.
  public func eventStream() async throws -> AsyncThrowingStream<SourceEvent, any Error> {
    let (stream, continuation) = AsyncThrowingStream.makeStream(
      of: SourceEvent.self, throwing: (any Error).self)
    let start = ResumeOnce<Void, any Error>()
    let task = Task {
      do {
        try await run(isolation: nil) {
          start.resume()
        } deliver: { batch in
          for event in batch { continuation.yield(event) }
        }
        start.resume()
        continuation.finish()
      } catch {
        start.resume(with: .failure(error))
        continuation.finish(throwing: error)
      }
    }
    continuation.onTermination = { _ in task.cancel() }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { start.arm($0) }
    } onCancel: {
      task.cancel()
    }
    return stream
  }
}
