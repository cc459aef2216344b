#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The adaptive-exit rule (docs/ARCHITECTURE.md), with `log(exitMissProbability)` taken once
/// per settings change rather than once per sighting.
///
/// The advertising interval is the shortest recent gap (two packets in a row get through often
/// enough); the loss rate is the share of expected packets that did not arrive. Silence of `t`
/// seconds then has probability `loss^(t/interval)` of being bad luck; the beacon exits once that
/// is below `exitMissProbability`.
struct ExitRule: Equatable, Sendable {
  var exitTimeout: Double
  var exitTimeoutMax: Double
  var logMissProbability: Double

  init(_ settings: PresenceSettings) {
    exitTimeout = settings.exitTimeout
    exitTimeoutMax = settings.exitTimeoutMax
    logMissProbability = log(settings.exitMissProbability)
  }

  /// Bit for bit, so that a rule is only ever replaced by one that computes the same delays.
  static func == (a: ExitRule, b: ExitRule) -> Bool {
    a.exitTimeout.bitPattern == b.exitTimeout.bitPattern
      && a.exitTimeoutMax.bitPattern == b.exitTimeoutMax.bitPattern
      && a.logMissProbability.bitPattern == b.logMissProbability.bitPattern
  }

  func delay(_ history: SightingHistory) -> Double {
    guard history.count >= 3 else { return exitTimeout }
    return delay(count: history.count, interval: history.interval, span: history.span)
  }

  /// The delay after `count` sightings `span` seconds apart (newest minus oldest), the shortest
  /// gap between consecutive ones being `interval` (infinite when no gap counts).
  func delay(count: Int, interval: Double, span: Double) -> Double {
    guard count >= 3, interval.isFinite else { return exitTimeout }
    let expected = span / interval + 1
    // A Beta(4, 4) prior keeps a young estimate near 50% loss until the beacon has shown
    // otherwise; 0.05 covers the estimate's noise.
    let missed = max(0, expected - Double(count))
    let loss = min(0.95, (missed + 4) / (expected + 8) + 0.05)
    let silence = interval * logMissProbability / log(loss)
    return min(max(exitTimeout, silence), max(exitTimeout, exitTimeoutMax))
  }
}

/// The last `capacity` sighting times of a beacon, in arrival order, with what the exit delay
/// needs from them kept up to date as sightings arrive.
///
/// A ring buffer, so that the oldest time is dropped without shifting the others; the shortest
/// gap is maintained with a count of the gaps equal to it, so the window is rescanned only when
/// the last gap at the minimum leaves it (about once per `capacity` sightings for a jittery
/// beacon, never for a perfectly regular one). Every value is the one the straightforward scan
