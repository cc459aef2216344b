import Dispatch

#if canImport(Glibc)
  import Glibc
#endif

/// Unix signals as an AsyncStream, on Dispatch signal sources (swift-service-lifecycle's
/// pattern): the signals are ignored for default handling while the stream lives and restored in
/// its termination handler.
public enum SignalStream {
  public static func make(_ signals: [Int32]) -> AsyncStream<Int32> {
    AsyncStream { continuation in
      /// Dispatch's signal sources are thread-safe but not marked Sendable.
      final class Sources: @unchecked Sendable {
        let all: [any DispatchSourceSignal]
        init(_ all: [any DispatchSourceSignal]) { self.all = all }
      }
      let sources = Sources(
        signals.map { number -> any DispatchSourceSignal in
          signal(number, SIG_IGN)
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
