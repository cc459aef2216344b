/// Where advertisements come from: BlueZ over D-Bus, raw HCI, a btsnoop replay, the demo's
/// simulated radio, or a test's MockAdapter.
public protocol AdvertisementSource: Sendable {
  /// Human name of the backend, e.g. "bluez (active discovery)".
  var description: String { get }
  /// Runs the source in the caller's isolation: starts it (throwing why it cannot, for example no
  /// such adapter), calls `started`, then hands each array of events, in the arrays the backend
  /// read them in (one D-Bus read pass, say), to `deliver` until the source ends (returns) or
  /// fails (throws). Cancelling the calling task stops it.
  ///
  /// This is the one shape of discovery. A stream between the source and its consumer would cost
  /// a task of its own and a thread hop per array; here a source that reads on a thread of its
  /// own resumes the caller, on the caller's actor, once per array, and the consumer's work runs
  /// in that same job.
  func run(
    isolation: isolated (any Actor)?, started: () -> Void, deliver: ([SourceEvent]) async -> Void
  ) async throws
  /// Returns once a stopped source has put the radio back (StopDiscovery, scan disabled). A
  /// process about to exit awaits it, or the cleanup would die with it.
  func finished() async
}

extension AdvertisementSource {
  public func finished() async {}

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
