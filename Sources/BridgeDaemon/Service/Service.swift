import Synchronization

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
/// stopped, or once `stopBudget` has passed, leaving behind those that did not (they die with
/// the process: a stop takes at most 5 s, whatever a broker or a backend does); SIGHUP calls
/// `reload`, beside the signal loop; the first service to stop on its own, by returning or
/// throwing, cancels the rest. `stopping` runs first, at the signal (the uploads abandon the
/// post in flight).
struct ServiceGroup: Sendable {
  /// Why the group stopped.
  enum Stop: Sendable {
    case signal(Int32)
    /// A service stopped on its own (named by its type), with its error if it threw.
    case serviceEnded(String, (any Error)?)
  }

  var services: [any Service]
  var signals: AsyncStream<Int32>
  /// How long the cancelled services may take to stop, from the signal.
  var stopBudget: Duration = .seconds(3)
  var stopping: @Sendable () -> Void = {}
  var reload: @Sendable () async -> Void

  init(
    services: [any Service], signals: AsyncStream<Int32>, stopBudget: Duration = .seconds(3),
    stopping: @escaping @Sendable () -> Void = {}, reload: @escaping @Sendable () async -> Void
  ) {
    self.services = services
    self.signals = signals
    self.stopBudget = stopBudget
    self.stopping = stopping
    self.reload = reload
  }

  /// What the group's tasks report, in the order it happens.
  private enum Event: Sendable {
    case stop(Stop)
    /// A service's task ended (after a stop, or on its own, which `stop` also reports).
    case ended
    case budgetSpent
  }

  func run() async -> Stop { await runReporting().stop }

  /// `run`, and the services that had not stopped when the budget was spent, by type (empty:
  /// all did).
  func runReporting() async -> (stop: Stop, leftBehind: [String]) {
    let (events, report) = AsyncStream.makeStream(of: Event.self)
    let running = RunningServices()
    // Unstructured: a task group would wait for a service that does not stop.
    var tasks: [Task<Void, Never>] = []
    for (index, service) in services.enumerated() {
      let name = String(describing: type(of: service))
      let key = "\(index) \(name)"
      running.names.withLock { _ = $0.insert(key) }
      tasks.append(
        Task {
          var outcome: Stop?
          do {
            try await service.run()
            if !Task.isCancelled { outcome = .serviceEnded(name, nil) }
          } catch {
            if !Task.isCancelled { outcome = .serviceEnded(name, error) }
          }
          running.names.withLock { _ = $0.remove(key) }
          if let outcome { report.yield(.stop(outcome)) }
          report.yield(.ended)
        })
    }
    let signalLoop = Task {
      // Reloads run one at a time beside the signal loop, never in it, so a SIGTERM that comes
      // while the configuration is read is answered at once; SIGHUPs during a reload fold into
      // one more. The reload task is not awaited at stop: a reload cannot hold the exit.
      let (requests, requested) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
      let reloading = Task { for await _ in requests { await reload() } }
      defer {
        requested.finish()
        reloading.cancel()
      }
      for await number in signals {
        if number == SIGHUP {
          requested.yield()
        } else {
          report.yield(.stop(.signal(number)))
          return
        }
      }
    }
    var stop: Stop?
    var iterator = events.makeAsyncIterator()
    while stop == nil, let event = await iterator.next() {
      if case .stop(let first) = event { stop = first }
    }
    stopping()
    signalLoop.cancel()
    for task in tasks { task.cancel() }
    let budget = stopBudget
    let timer = Task {
      guard (try? await Task.sleep(for: budget)) != nil else { return }
      report.yield(.budgetSpent)
    }
    defer { timer.cancel() }
    while !running.names.withLock({ $0.isEmpty }), let event = await iterator.next() {
      if case .budgetSpent = event { break }
    }
    let left = running.names.withLock {
      $0.map { String($0.split(separator: " ", maxSplits: 1).last ?? "") }.sorted()
    }
    return (stop ?? .signal(SIGTERM), left)
  }
}

/// The services whose tasks have not ended, as "index type".
private final class RunningServices: Sendable {
  let names = Mutex<Set<String>>([])
}
