import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// Unix signals as an AsyncStream, on Dispatch signal sources (swift-service-lifecycle's
/// pattern).
///
/// On Linux, libdispatch reads a signal source's signal from a `signalfd`, which it opens, and
/// installs its handler for, on its manager thread some time after `resume()`. A signal that
/// arrives before then takes the signal's disposition: the default kills the process, and
/// `SIG_IGN` (what the pattern sets on Darwin) discards it, which left a daemon stopped right
/// after READY=1 running until systemd's SIGKILL. A daemon therefore calls `hold(_:)` first thing
/// in `main`: a held signal stays pending until the stream's `signalfd` reads it, however early it
/// comes.
public enum SignalStream {
  /// Blocks `signals` in the calling thread, and so in every thread it starts afterwards. Call it
  /// on the main thread before any other thread starts: the kernel then queues the signals for
  /// the process (no thread takes them) until `make` reads them.
  ///
  /// The process then stops only through the stream: call it only where one is made, and give
  /// children a clean mask (`CurlTransferProcess` does).
  public static func hold(_ signals: [Int32]) {
    var set = sigset_t()
    sigemptyset(&set)
    for number in signals { sigaddset(&set, number) }
    pthread_sigmask(SIG_BLOCK, &set, nil)
  }

  public static func make(_ signals: [Int32]) -> AsyncStream<Int32> {
    AsyncStream { continuation in
      /// Dispatch's signal sources are thread-safe but not marked Sendable.
      final class Sources: @unchecked Sendable {
        let all: [any DispatchSourceSignal]
        init(_ all: [any DispatchSourceSignal]) { self.all = all }
      }
      // No SIG_IGN: it would discard a signal that is pending, or that comes before libdispatch
      // installs its handler. Held signals (`hold`) wait; others act by default until then.
      let sources = Sources(
        signals.map { number -> any DispatchSourceSignal in
          let source = DispatchSource.makeSignalSource(signal: number)
          source.setEventHandler { continuation.yield(number) }
          source.resume()
          return source
        })
      continuation.onTermination = { _ in
        for source in sources.all { source.cancel() }
        for number in signals { signal(number, SIG_DFL) }
      }
    }
  }
}
