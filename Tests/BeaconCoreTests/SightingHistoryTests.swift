import BeaconTestSupport
import Testing

@testable import BeaconCore

/// `SightingHistory` keeps the exit delay's inputs up to date as sightings arrive; these hold it
/// to the straightforward formula over the last `historyLength` sighting times.
@Suite struct SightingHistoryTests {
  /// Sighting times of several shapes: jittery and lossy, exactly regular (equal gaps, so the
  /// shortest gap is shared), with repeats shorter than `minimumGap`, and now and then out of
  /// order.
  static func times(seed: UInt64, count: Int) -> [Timestamp] {
    var generator = SeededGenerator(seed: seed)
    let shape = seed % 4
    let interval = [0.1, 1, 0.25, 0.7][Int(seed % 4)]
    var times: [Timestamp] = []
    var t = Double.random(in: 0..<100, using: &generator).rounded()
    var tick = 0
    while times.count < count {
      tick += 1
      switch shape {
      case 0:
        // Jitter and 40% loss.
        guard Double.random(in: 0..<1, using: &generator) >= 0.4 else { continue }
        times.append(
          Timestamp(seconds: t + Double(tick) * interval + Double.random(in: -0.01...0.01, using: &generator))
        )
      case 1:
        // Exactly regular, with losses: every gap is a multiple of the interval.
        guard Double.random(in: 0..<1, using: &generator) >= 0.3 else { continue }
        times.append(Timestamp(seconds: t + Double(tick) * interval))
      case 2:
        // Repeats a few milliseconds apart (two receivers), and gaps that grow and shrink.
        t += interval * Double(Int.random(in: 1...4, using: &generator))
        times.append(Timestamp(seconds: t))
        if Bool.random(using: &generator) {
          times.append(Timestamp(seconds: t + Double.random(in: 0...0.005, using: &generator)))
        }
      default:
        // Out of order now and then (a late report), and the same instant twice.
        t += Double.random(in: 0...(2 * interval), using: &generator)
        let late = Int.random(in: 0..<8, using: &generator) == 0
        times.append(Timestamp(seconds: late ? t - Double.random(in: 0...3, using: &generator) : t))
      }
    }
    return times
  }

  @Test(arguments: Array(0..<64) as [UInt64])
  func incrementalStateMatchesTheFormula(seed: UInt64) {
    let tracker = PresenceTracker()
    let times = Self.times(seed: seed, count: 400)
    var history = SightingHistory(times[0])
    for n in 1...times.count {
      if n > 1 { history.append(times[n - 1]) }
      let window = Array(times[max(0, n - PresenceTracker.historyLength)..<n])
      #expect(history.recent == window, "seed \(seed), sighting \(n)")
      let incremental = tracker.exitDelay(history)
      let formula = tracker.exitDelay(window)
      #expect(
        incremental.bitPattern == formula.bitPattern,
        "seed \(seed), sighting \(n): \(incremental) ≠ \(formula)")
    }
  }

  /// The same through `observe`: the deadline it keeps is the last sighting plus the formula's
  /// delay.
  @Test(arguments: Array(0..<16) as [UInt64])
  func trackerDeadlineMatchesTheFormula(seed: UInt64) throws {
    var settings = PresenceSettings()
    settings.exitMissProbability = [1e-7, 1e-3, 1e-12, 0.5][Int(seed % 4)]
    var tracker = PresenceTracker(settings: settings)
    let frame = BeaconFrame.iBeacon(IBeaconFrame(identity: Fixtures.vanBeacon, measuredPower: -59))
    let ad = Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: -60)
    let times = Self.times(seed: seed, count: 300)
    var lastSeen = times[0]
    for (n, time) in times.enumerated() {
      _ = tracker.observe(frame, from: ad, at: time)
      lastSeen = max(lastSeen, time)
      let window = Array(times[max(0, n + 1 - PresenceTracker.historyLength)...n])
      let deadline = try #require(tracker.nextDeadline)
      #expect(deadline == lastSeen + tracker.exitDelay(window), "seed \(seed), sighting \(n + 1)")
    }
  }

  /// Exit delays are computed when a deadline is needed; a settings change in between must not
  /// reach back to sightings made before it (as it never did when every sighting computed its
  /// delay at once).
  @Test func settingsChangeAppliesFromTheNextSighting() throws {
    var tracker = PresenceTracker()
    let frame = BeaconFrame.iBeacon(IBeaconFrame(identity: Fixtures.vanBeacon, measuredPower: -59))
    let ad = Fixtures.iBeacon(Fixtures.vanBeacon, address: Fixtures.vanAddress, rssi: -60)
    let times = [0, 1, 2, 4, 5, 7, 8, 9].map { Timestamp(seconds: Double($0)) }
    for time in times { _ = tracker.observe(frame, from: ad, at: time) }
    let before = try #require(tracker.nextDeadline)
    #expect(before == Timestamp(seconds: 9) + PresenceTracker().exitDelay(times))
    var changed = PresenceSettings()
    changed.exitMissProbability = 1e-3
    changed.exitTimeout = 3
    tracker.settings = changed
    #expect(tracker.nextDeadline == before)
    #expect(tracker.expire(at: before + -0.001).isEmpty)
    let later = Timestamp(seconds: 10)
    _ = tracker.observe(frame, from: ad, at: later)
    #expect(tracker.nextDeadline == later + PresenceTracker(settings: changed).exitDelay(times + [later]))
    #expect(tracker.nextDeadline != later + PresenceTracker().exitDelay(times + [later]))
  }
}
