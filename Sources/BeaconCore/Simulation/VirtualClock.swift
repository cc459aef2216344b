import Synchronization

/// A clock that moves only when told to. `simulate` and `replay` run the real bridge on it, and
/// tests use it as their TestClock.
///
/// Sleepers register a deadline and resume, in deadline order, when `advance` passes it. Tests
/// can wait until the expected number of sleepers is registered (`waitForSleepers`) instead of
/// yielding and hoping.
public final class VirtualClock: Clock, Sendable {
  public struct Instant: InstantProtocol, Hashable, Sendable {
    public var offset: Duration

    public init(offset: Duration) { self.offset = offset }

    public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
    public func duration(to other: Instant) -> Duration { other.offset - offset }
    public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
  }

  private struct Sleeper {
    var id: UInt64
    var deadline: Instant
    var continuation: CheckedContinuation<Void, any Error>
  }

  private struct State {
    var now = Instant(offset: .zero)
    var sleepers: [Sleeper] = []
    var nextID: UInt64 = 0
  }

  private let state = Mutex(State())

  public init() {}

  public var now: Instant { state.withLock { $0.now } }

  public var minimumResolution: Duration { .zero }

  /// How many tasks are sleeping on this clock.
  public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

  public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
    try Task.checkCancellation()
    let id = state.withLock { s -> UInt64 in
      s.nextID += 1
      return s.nextID
    }
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        let resumeNow = state.withLock { s -> Bool in
          if deadline <= s.now || Task.isCancelled { return true }
          s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
          return false
        }
        if resumeNow {
          if Task.isCancelled {
            continuation.resume(throwing: CancellationError())
          } else {
            continuation.resume()
          }
        }
      }
    } onCancel: {
      let cancelled = state.withLock { s -> Sleeper? in
        guard let index = s.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
        return s.sleepers.remove(at: index)
      }
      cancelled?.continuation.resume(throwing: CancellationError())
    }
  }

  /// Moves time forward to `instant` (never backwards) and wakes every sleeper whose deadline has
  /// come, earliest first.
  public func advance(to instant: Instant) {
    let due = state.withLock { s -> [Sleeper] in
      if instant > s.now { s.now = instant }
      let now = s.now
      let due = s.sleepers.filter { $0.deadline <= now }.sorted {
        ($0.deadline, $0.id) < ($1.deadline, $1.id)
      }
      s.sleepers.removeAll { $0.deadline <= now }
      return due
    }
    for sleeper in due { sleeper.continuation.resume() }
  }

  public func advance(by duration: Duration) {
    advance(to: now.advanced(by: duration))
  }

  /// Sets time to `seconds` after the clock's origin. Callers range-check their times
  /// (`Scenario.maximumSeconds`); a time past what the clock holds (2⁶³ ns) stops at its end
  /// rather than trapping, and NaN or a negative time leaves the clock where it is.
  public func set(seconds: Double) {
    advance(to: Instant(offset: Self.offset(seconds: seconds)))
  }

  /// `seconds` as nanoseconds, clamped to 0…(2⁶³ − 1024) ns: checked before the conversion.
  static func offset(seconds: Double) -> Duration {
    let nanoseconds = (seconds * 1e9).rounded()
    guard nanoseconds > 0 else { return .zero }  // also NaN
    // The largest Double below 2⁶³: Int64(_:) of anything larger traps.
    let largest = Double(Int64.max).nextDown
    return .nanoseconds(Int64(min(nanoseconds, largest)))
  }

  /// Waits until at least `count` tasks sleep on this clock.
  public func waitForSleepers(count: Int) async {
    // Polls with a short real sleep rather than spinning on yield, which can starve the tasks it
    // waits for on a two-thread cooperative pool.
    while sleeperCount < count { try? await Task.sleep(for: .microseconds(200)) }
  }
}
