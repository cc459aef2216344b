import BeaconTestSupport
import Testing

@testable import BeaconCore

#if canImport(Glibc)
  import Glibc
#endif

/// The adaptive-exit rule written out again from its definition (docs/ARCHITECTURE.md,
/// `PresenceSettings`), sharing nothing with `ExitRule`: over the last 64 sighting times in
/// arrival order, the advertising interval is the shortest gap longer than 5 ms, the loss rate
/// is the share of expected packets missing with a Beta(4, 4) prior plus 0.05 (at most 0.95),
/// and the beacon exits once `loss^(silence/interval)` falls below `exitMissProbability`,
/// clamped to `[exitTimeout, max(exitTimeout, exitTimeoutMax)]`. Fewer than three sightings, or
/// no gap that counts, give `exitTimeout`.
enum ExitOracle {
  static let window = 64
  static let repeatGap = 0.005

  static func delay(_ times: [Timestamp], _ settings: PresenceSettings = PresenceSettings()) -> Double {
    let recent = times.suffix(window).map(\.seconds)
    guard recent.count >= 3 else { return settings.exitTimeout }
    var interval = Double.infinity
    for (a, b) in zip(recent, recent.dropFirst()) where b - a > repeatGap { interval = min(interval, b - a) }
    guard interval.isFinite else { return settings.exitTimeout }
    let span = recent[recent.count - 1] - recent[0]
    let expected = span / interval + 1
    let missed = max(0, expected - Double(recent.count))
    let loss = min(0.95, (missed + 4) / (expected + 8) + 0.05)
    let silence = interval * log(settings.exitMissProbability) / log(loss)
    return min(max(settings.exitTimeout, silence), max(settings.exitTimeout, settings.exitTimeoutMax))
  }
}

/// `SightingHistory` keeps the exit delay's inputs up to date as sightings arrive; these hold it,
/// and the tracker's deadlines, to `ExitOracle`, and the oracle to values worked out by hand.
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

  /// The oracle against values worked out by hand (exitTimeout 10 s, exitTimeoutMax 60 s,
  /// exitMissProbability 1e-7, so ln p = -16.118).
  @Test func theOracleGivesTheHandWorkedValues() {
    func seconds(_ values: [Double]) -> [Timestamp] { values.map { Timestamp(seconds: $0) } }
    // Two sightings: too few to judge, the plain timeout.
    #expect(ExitOracle.delay(seconds([0, 1])) == 10)
    // Only repeats (gaps of 5 ms or less): no interval, the plain timeout.
    #expect(ExitOracle.delay(seconds([0, 0.001, 0.002])) == 10)
    // 1 Hz, nothing lost, 64 sightings: expected 64, loss 4/72 + 0.05 = 0.1056, silence
    // 16.118 / 2.248 = 7.17 s, below the 10 s floor.
    #expect(ExitOracle.delay(seconds((0..<64).map(Double.init))) == 10)
    // 1 Hz losing 2 packets in 5 (seconds ≡ 0, 2, 4 mod 5, 120 sightings up to 199 s): the window
    // is the last 64, 94 s to 199 s; interval 1, expected 106, missed 42, loss 46/114 + 0.05 =
    // 0.4535, silence 16.118 / 0.7907 = 20.38 s. (All 120 would give 20.40 s.)
    let lossy = (0..<200).filter { [0, 2, 4].contains($0 % 5) }.map(Double.init)
    #expect(abs(ExitOracle.delay(seconds(lossy)) - 20.383_542_071_451_423) < 1e-9)
    // A 3 ms repeat does not count as the interval: the shortest gap is 0.997 s (3 ms to 1 s);
    // span 3, expected 4.009, nothing missed, loss 0.3831, silence 16.75 s.
    #expect(abs(ExitOracle.delay(seconds([0, 0.003, 1, 2, 3])) - 16.747_963_465_447_66) < 1e-9)
    // Three at 1 Hz, then one every 30 s: loss capped at 0.95, silence 314 s, clamped to 60 s.
    #expect(ExitOracle.delay(seconds([0, 1, 2] + (1..<8).map { 2 + 30 * Double($0) })) == 60)
  }

  @Test(arguments: Array(0..<64) as [UInt64])
  func incrementalStateMatchesTheOracle(seed: UInt64) {
    let rule = ExitRule(PresenceSettings())
    let times = Self.times(seed: seed, count: 400)
    var history = SightingHistory(times[0])
    for n in 1...times.count {
      if n > 1 { history.append(times[n - 1]) }
      let window = Array(times[max(0, n - ExitOracle.window)..<n])
      #expect(history.recent == window, "seed \(seed), sighting \(n)")
      let incremental = rule.delay(history)
      let formula = ExitOracle.delay(window)
      #expect(
        incremental.bitPattern == formula.bitPattern,
        "seed \(seed), sighting \(n): \(incremental) ≠ \(formula)")
    }
  }

  /// The same through `observe`: the deadline it keeps is the last sighting plus the oracle's
  /// delay.
  @Test(arguments: Array(0..<16) as [UInt64])
  func trackerDeadlineMatchesTheOracle(seed: UInt64) throws {
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
      let next = tracker.nextDeadline
      let deadline = try #require(next)
      #expect(
        deadline == lastSeen + ExitOracle.delay(Array(times[...n]), settings),
        "seed \(seed), sighting \(n + 1)")
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
    let next = tracker.nextDeadline
    let before = try #require(next)
    #expect(before == Timestamp(seconds: 9) + ExitOracle.delay(times))
    var changed = PresenceSettings()
    changed.exitMissProbability = 1e-3
    changed.exitTimeout = 3
    tracker.settings = changed
    #expect(tracker.nextDeadline == before)
    #expect(tracker.expire(at: before + -0.001).isEmpty)
    let later = Timestamp(seconds: 10)
    _ = tracker.observe(frame, from: ad, at: later)
    #expect(tracker.nextDeadline == later + ExitOracle.delay(times + [later], changed))
    #expect(tracker.nextDeadline != later + ExitOracle.delay(times + [later]))
  }
}
