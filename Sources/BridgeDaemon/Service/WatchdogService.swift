/// `WATCHDOG=1` at half of `WATCHDOG_USEC`, and never more often than `shortestInterval`.
struct WatchdogService: Service {
  /// The floor under the ping interval. `WATCHDOG_USEC=1` asks for a ping every half
  /// microsecond, which would turn this task into a busy loop that starves the scan path on a
  /// two-core box; no real watchdog needs ten pings a second.
  static let shortestInterval: Duration = .milliseconds(100)

  let notifier: SystemdNotifier
  let interval: Duration

  /// `requested` is `SystemdNotifier.watchdogInterval`; the service pings at `interval(for:)`.
  init(notifier: SystemdNotifier, interval requested: Duration) {
    self.notifier = notifier
    interval = Self.interval(for: requested)
  }

  /// The interval between pings for a requested one: the request, but not below the floor.
  static func interval(for requested: Duration) -> Duration { max(requested, shortestInterval) }

  func run() async throws {
    while true {
      notifier.notify("WATCHDOG=1")
      try await Task.sleep(for: interval)
    }
  }
}
