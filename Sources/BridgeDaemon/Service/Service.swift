#if canImport(Glibc)
  import Glibc
#endif

/// A long-running part of the daemon (swift-service-lifecycle's contract): `run()` returns or
/// throws only when the service has stopped. Cancellation asks it to stop gracefully.
protocol Service: Sendable {
  func run() async throws
}

/// Runs the daemon's services together (swift-service-lifecycle's `ServiceGroup`, cut to what the
/// daemon needs): SIGTERM or SIGINT cancels every service and the group returns once all have
/// stopped; SIGHUP calls `reload`, beside the signal loop; the first service to stop on its own, by returning or
/// throwing, cancels the rest.
struct ServiceGroup: Sendable {
  /// Why the group stopped.
  enum Stop: Sendable {
    case signal(Int32)
    /// A service stopped on its own (named by its type), with its error if it threw.
    case serviceEnded(String, (any Error)?)
  }

  var services: [any Service]
  var signals: AsyncStream<Int32>
  var reload: @Sendable () async -> Void

  func run() async -> Stop {
    await withTaskGroup(of: Stop?.self) { group in
      for service in services {
        group.addTask {
          let name = String(describing: type(of: service))
          do {
            try await service.run()
            return Task.isCancelled ? nil : .serviceEnded(name, nil)
          } catch {
            return Task.isCancelled ? nil : .serviceEnded(name, error)
          }
        }
      }
      group.addTask {
        // Reloads run one at a time beside the signal loop, never in it, so a SIGTERM that comes
        // while the configuration is read is answered at once; SIGHUPs during a reload fold into
        // one more. The reload task is not awaited at stop: a reload cannot hold the exit.
        let (requests, requested) = AsyncStream.makeStream(
          of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let reloading = Task { for await _ in requests { await reload() } }
        defer {
          requested.finish()
          reloading.cancel()
        }
        for await number in signals {
          if number == SIGHUP { requested.yield() } else { return .signal(number) }
        }
        return nil
      }
      var stop: Stop?
      while stop == nil, let next = await group.next() { stop = next }
      group.cancelAll()
      return stop ?? .signal(SIGTERM)
    }
  }
}
