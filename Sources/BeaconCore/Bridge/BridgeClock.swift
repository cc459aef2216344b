/// The bridge's view of a `Clock<Duration>`: timestamps since the moment the bridge was made, and
/// sleeping until one. Any clock works: `ContinuousClock` in the daemon, a `VirtualClock` in
/// tests, `simulate` and `replay`, a scaled clock in the demo.
public struct BridgeClock: Sendable {
  public let now: @Sendable () -> Timestamp
  public let sleep: @Sendable (Timestamp) async throws -> Void

  public init<C: Clock>(_ clock: C) where C.Duration == Duration {
    let origin = clock.now
    now = { Timestamp(seconds: origin.duration(to: clock.now).seconds) }
    sleep = { deadline in
      try await clock.sleep(until: origin.advanced(by: .seconds(deadline.seconds)), tolerance: nil)
    }
  }
}

extension Duration {
  /// The duration in seconds, as a Double.
  public var seconds: Double {
    let (s, attoseconds) = components
    return Double(s) + Double(attoseconds) / 1e18
  }
}
