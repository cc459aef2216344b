import Testing

@testable import BridgeDaemon

/// The watchdog's ping interval has a floor (issue 28): `WATCHDOG_USEC=1` must not make the
/// daemon ping in a busy loop.
@Suite struct WatchdogIntervalTests {
  func pingInterval(watchdogUsec: String) throws -> Duration {
    let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": watchdogUsec])
    let requested = try #require(notifier.watchdogInterval)
    return WatchdogService(notifier: notifier, interval: requested).interval
  }

  @Test(arguments: ["1", "2", "3", "1000", "199999"])
  func aTinyWatchdogIsPingedAtTheFloor(watchdogUsec: String) throws {
    #expect(try pingInterval(watchdogUsec: watchdogUsec) == WatchdogService.shortestInterval)
    #expect(WatchdogService.shortestInterval == .milliseconds(100))
  }

  @Test(arguments: [
    ("200000", Duration.milliseconds(100)), ("30000000", .seconds(15)), ("3000001", .microseconds(1_500_000)),
  ])
  func anOrdinaryWatchdogIsPingedAtHalfItsTimeout(watchdogUsec: String, interval: Duration) throws {
    #expect(try pingInterval(watchdogUsec: watchdogUsec) == interval)
  }

  @Test func theFloorIsAPureFunctionOfTheRequest() {
    #expect(WatchdogService.interval(for: .zero) == .milliseconds(100))
    #expect(WatchdogService.interval(for: .nanoseconds(1)) == .milliseconds(100))
    #expect(WatchdogService.interval(for: .seconds(-1)) == .milliseconds(100))
    #expect(WatchdogService.interval(for: .milliseconds(250)) == .milliseconds(250))
  }
}
