#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Smooths RSSI over time.
///
/// Filters are time-aware: each measurement carries its timestamp, and what a filter forgets
/// depends on elapsed time, not on how many samples arrived. A beacon advertising at 10 Hz and one
/// at 1 Hz converge to the same value at the same speed.
public protocol RSSIFilter: Sendable {
  /// Adds one measurement. Callers have already dropped unknown values (see `RSSI.isKnown`).
  mutating func add(_ rssi: Double, at time: Timestamp)
  /// The smoothed value at `time`, or nil before the first measurement.
  func value(at time: Timestamp) -> Double?
}

/// Which filter presence uses. A setting (`rssiFilter`).
public enum RSSIFilterKind: String, Sendable, CaseIterable, Codable {
  case kalman
  case runningAverage
  case arma

  public func make(settings: RSSISettings) -> any RSSIFilter {
    switch PresenceRSSIFilter(self, settings: settings) {
    case .kalman(let filter): filter
    case .runningAverage(let filter): filter
    case .arma(let filter): filter
    }
  }
}

/// One of the filters `RSSIFilterKind` names, as a concrete enum.
///
/// `PresenceTracker` updates a filter on every sighting; through `any RSSIFilter` each update
/// was a dynamic call on a boxed value (and copying an entry copied the box). An enum is stored
/// inline and dispatched with a switch.
enum PresenceRSSIFilter: Sendable {
  case kalman(KalmanRSSIFilter)
  case runningAverage(RunningAverageRSSIFilter)
  case arma(ARMARSSIFilter)

  init(_ kind: RSSIFilterKind, settings: RSSISettings) {
    switch kind {
    case .kalman:
      self = .kalman(
        KalmanRSSIFilter(
          measurementNoise: settings.kalmanMeasurementSigma * settings.kalmanMeasurementSigma,
          processNoisePerSecond: settings.kalmanProcessNoisePerSecond,
          referenceInterval: settings.kalmanReferenceInterval))
    case .runningAverage:
      self = .runningAverage(
        RunningAverageRSSIFilter(
          window: settings.runningAverageWindow, trimFraction: settings.runningAverageTrim))
    case .arma:
      self = .arma(
        ARMARSSIFilter(
          coefficient: settings.armaCoefficient, referenceInterval: settings.armaReferenceInterval))
    }
  }

  /// Inlined into presence's sighting, so that the Kalman filter (the default) is updated in
  /// place rather than copied out of the enum and back through a call.
  @inline(__always)
  mutating func add(_ rssi: Double, at time: Timestamp) {
    switch self {
    case .kalman(var filter):
      filter.add(rssi, at: time)
      self = .kalman(filter)
    case .runningAverage(var filter):
      // Let go of this copy first, so that the samples array is uniquely referenced and
      // appended to in place.
      self = .kalman(KalmanRSSIFilter(measurementNoise: 0, processNoisePerSecond: 0))
      filter.add(rssi, at: time)
      self = .runningAverage(filter)
    case .arma(var filter):
      filter.add(rssi, at: time)
      self = .arma(filter)
    }
  }

  func value(at time: Timestamp) -> Double? {
    switch self {
    case .kalman(let filter): filter.value(at: time)
    case .runningAverage(let filter): filter.value(at: time)
    case .arma(let filter): filter.value(at: time)
    }
  }
}

/// RSSI settings; every number is a configuration key.
public struct RSSISettings: Hashable, Sendable {
  public var filter: RSSIFilterKind = .kalman
  /// Measurement noise, dB (docs/DESIGN.md, Behaviour: σ ≈ 3 dB).
  public var kalmanMeasurementSigma: Double = 3
  /// How much the true RSSI may drift per second, dB². A walking person changes path loss by a
  /// few dB per second; 1 dB²/s keeps the filter responsive without following every fade.
  public var kalmanProcessNoisePerSecond: Double = 1
  /// The measurement noise is that of one reading per this many seconds. Readings closer together
  /// than this share one reading's worth of information (fading is correlated over short times),
  /// which keeps the filter's speed and smoothing independent of the advertising rate.
  public var kalmanReferenceInterval: Double = 1
  /// AltBeacon RunningAverageRssiFilter defaults: a 20 s window, 10% trimmed at each end.
  public var runningAverageWindow: Double = 20
  public var runningAverageTrim: Double = 0.1
  /// AltBeacon ArmaRssiFilter default coefficient c = 0.1, applied per `armaReferenceInterval`.
  public var armaCoefficient: Double = 0.1
  /// AltBeacon applies one ARMA step per measurement, and its ArmaRssiFilter documentation
  /// recommends c = 0.1 for signals at about 1 Hz. Here the step is scaled to elapsed time, one full
  /// step per this interval, so that c = 0.1 means the same at any advertising rate.
  public var armaReferenceInterval: Double = 1

  public init() {}
}

public enum RSSI {
  /// 127 is "RSSI not available" in HCI reports (Core Specification Vol 4, Part E, 7.7.65.2) and
  /// BlueZ/btvirt report it as such; 0 is what several stacks report when they have no value.
  public static func isKnown(_ rssi: Int) -> Bool {
    rssi != 127 && rssi != 0 && rssi >= -127 && rssi < 21
  }
}

/// A one-dimensional Kalman filter with a random-walk model.
///
/// Both noises are scaled to time, so the filter follows a change at the same speed and smooths
/// to the same variance whatever the advertising rate:
/// - the process noise grows with the time since the last update (`processNoisePerSecond`);
/// - the measurement noise is that of one reading per `referenceInterval`. A reading `dt` seconds
///   after the previous one counts for `dt / referenceInterval` of a reading when `dt` is shorter
///   (its variance is scaled up by the inverse), and for one reading when `dt` is longer.
///
/// Without the second rule, a beacon at 10 Hz would be followed about three times faster than one
/// at 1 Hz with the default settings.
public struct KalmanRSSIFilter: RSSIFilter {
  public let measurementNoise: Double
  public let processNoisePerSecond: Double
  public let referenceInterval: Double
  private var estimate: Double?
  private var variance: Double = 0
  private var lastTime: Timestamp = .zero

  /// Readings closer together than this are treated as this far apart when weighing them, so a
  /// burst at one instant does not count for nothing (nor divide by zero).
  static let minimumInterval = 0.001

  public init(measurementNoise: Double, processNoisePerSecond: Double, referenceInterval: Double = 1) {
    self.measurementNoise = measurementNoise
    self.processNoisePerSecond = processNoisePerSecond
    self.referenceInterval = referenceInterval
  }

  @inline(__always)
  public mutating func add(_ rssi: Double, at time: Timestamp) {
    guard rssi.isFinite else { return }
    guard let x = estimate else {
      estimate = rssi
      variance = measurementNoise
      lastTime = time
      return
    }
    let dt = max(0, time - lastTime)
    let predicted = variance + processNoisePerSecond * dt
    let share = min(1, max(dt, Self.minimumInterval) / max(referenceInterval, Self.minimumInterval))
    let noise = measurementNoise / share
    let gain = predicted + noise > 0 ? predicted / (predicted + noise) : 1
    estimate = x + gain * (rssi - x)
    variance = (1 - gain) * predicted
    lastTime = max(lastTime, time)
  }

  public func value(at time: Timestamp) -> Double? { estimate }
}

/// AltBeacon's RunningAverageRssiFilter: the mean of the measurements younger than `window`
/// seconds, after dropping the lowest and highest of them.
///
/// AltBeacon (RunningAverageRssiFilter.calculateRssi) drops `size / 10 + 1` at each end once there
/// are more than two measurements, and keeps a measurement while its age is below the window (20 s
/// by default). The count here is `floor(size · trimFraction) + 1`, which is the same with the
/// default trimFraction of 0.1, and never leaves fewer than one measurement.
public struct RunningAverageRSSIFilter: RSSIFilter {
  public let window: Double
  public let trimFraction: Double
  private var samples: [(time: Timestamp, rssi: Double)] = []

  public init(window: Double, trimFraction: Double) {
    self.window = window
    self.trimFraction = trimFraction
  }

  public mutating func add(_ rssi: Double, at time: Timestamp) {
    guard rssi.isFinite else { return }
    samples.append((time, rssi))
    // Keep the newest sample even when the window is empty or not positive: value(at:) falls back
    // on it.
    let newest = samples.map(\.time).max() ?? time
    samples.removeAll { newest - $0.time >= window && $0.time < newest }
  }

  public func value(at time: Timestamp) -> Double? {
    var live = samples.filter { time - $0.time < window }.map(\.rssi)
    // With nothing inside the window, the last measurement stands in rather than nothing: whether
    // the beacon is still there is presence's question, not the filter's.
    if live.isEmpty { return samples.last?.rssi }
    live.sort()
    let size = live.count
    var trim = 0
    if size > 2 {
      let fraction = trimFraction.isFinite ? max(0, trimFraction) : 0
      trim = min(Int(min(Double(size), (Double(size) * fraction).rounded(.down))) + 1, (size - 1) / 2)
    }
    let kept = live[trim..<(size - trim)]
    return kept.reduce(0, +) / Double(kept.count)
  }
}

/// AltBeacon's ArmaRssiFilter (x += c·(new − x)), with the step scaled to the time elapsed so the
/// result does not depend on the advertising rate: over `referenceInterval` seconds the old value
/// keeps weight (1 − c), whatever the number of samples in between.
public struct ARMARSSIFilter: RSSIFilter {
  public let coefficient: Double
  public let referenceInterval: Double
  private var estimate: Double?
  private var lastTime: Timestamp = .zero

  public init(coefficient: Double, referenceInterval: Double) {
    self.coefficient = coefficient
    self.referenceInterval = referenceInterval
  }

  public mutating func add(_ rssi: Double, at time: Timestamp) {
    guard rssi.isFinite else { return }
    guard let x = estimate else {
      estimate = rssi
      lastTime = time
      return
    }
    let dt = max(0, time - lastTime)
    // Readings at the same instant move the estimate by nothing; with c outside 0…1 the step is
    // clamped rather than overshooting.
    let keep = min(1, max(0, 1 - coefficient))
    let alpha = 1 - pow(keep, dt / max(referenceInterval, 1e-9))
    estimate = x + alpha * (rssi - x)
    lastTime = max(lastTime, time)
  }

  public func value(at time: Timestamp) -> Double? { estimate }
}
