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
    switch self {
    case .kalman:
      KalmanRSSIFilter(
        measurementNoise: settings.kalmanMeasurementSigma * settings.kalmanMeasurementSigma,
        processNoisePerSecond: settings.kalmanProcessNoisePerSecond)
    case .runningAverage:
      RunningAverageRSSIFilter(window: settings.runningAverageWindow, trimFraction: settings.runningAverageTrim)
    case .arma:
      ARMARSSIFilter(coefficient: settings.armaCoefficient, referenceInterval: settings.armaReferenceInterval)
    }
  }
}

/// RSSI settings; every number is a configuration key.
public struct RSSISettings: Hashable, Sendable {
  public var filter: RSSIFilterKind = .kalman
  /// Measurement noise, dB (DESIGN §5: σ ≈ 3 dB).
  public var kalmanMeasurementSigma: Double = 3
  /// How much the true RSSI may drift per second, dB². A walking person changes path loss by a
  /// few dB per second; 1 dB²/s keeps the filter responsive without following every fade.
  public var kalmanProcessNoisePerSecond: Double = 1
  /// AltBeacon RunningAverageRssiFilter defaults: a 20 s window, 10% trimmed at each end.
  public var runningAverageWindow: Double = 20
  public var runningAverageTrim: Double = 0.1
  /// AltBeacon ArmaRssiFilter default coefficient c = 0.1, applied per `armaReferenceInterval`.
  public var armaCoefficient: Double = 0.1
  /// AltBeacon applies its ARMA step once per scan cycle (1.1 s foreground default); here the step
  /// is scaled to elapsed time against this interval.
  public var armaReferenceInterval: Double = 1.1

  public init() {}
}

public enum RSSI {
  /// 127 is "RSSI not available" in HCI reports (Core Specification Vol 4, Part E, 7.7.65.2) and
  /// BlueZ/btvirt report it as such; 0 is what several stacks report when they have no value.
  public static func isKnown(_ rssi: Int) -> Bool {
    rssi != 127 && rssi != 0 && rssi >= -127 && rssi < 21
  }
}

/// A one-dimensional Kalman filter with a random-walk model whose process noise grows with the
/// time since the last update.
public struct KalmanRSSIFilter: RSSIFilter {
  public let measurementNoise: Double
  public let processNoisePerSecond: Double
  private var estimate: Double?
  private var variance: Double = 0
  private var lastTime: Timestamp = .zero

  public init(measurementNoise: Double, processNoisePerSecond: Double) {
    self.measurementNoise = measurementNoise
    self.processNoisePerSecond = processNoisePerSecond
  }

  public mutating func add(_ rssi: Double, at time: Timestamp) {
    guard let x = estimate else {
      estimate = rssi
      variance = measurementNoise
      lastTime = time
      return
    }
    let dt = max(0, time - lastTime)
    let predicted = variance + processNoisePerSecond * dt
    let gain = predicted / (predicted + measurementNoise)
    estimate = x + gain * (rssi - x)
    variance = (1 - gain) * predicted
    lastTime = max(lastTime, time)
  }

  public func value(at time: Timestamp) -> Double? { estimate }
}

/// AltBeacon's RunningAverageRssiFilter: the mean of the measurements of the last `window`
/// seconds, after dropping the top and bottom `trimFraction` of them.
public struct RunningAverageRSSIFilter: RSSIFilter {
  public let window: Double
  public let trimFraction: Double
  private var samples: [(time: Timestamp, rssi: Double)] = []

  public init(window: Double, trimFraction: Double) {
    self.window = window
    self.trimFraction = trimFraction
  }

  public mutating func add(_ rssi: Double, at time: Timestamp) {
    samples.append((time, rssi))
    let cutoff = time + -window
    samples.removeAll { $0.time < cutoff }
  }

  public func value(at time: Timestamp) -> Double? {
    let cutoff = time + -window
    var live = samples.filter { $0.time >= cutoff }.map(\.rssi)
    // AltBeacon keeps the last value when the window is empty rather than reporting nothing.
    if live.isEmpty { return samples.last?.rssi }
    live.sort()
    let trim = Int(Double(live.count) * trimFraction)
    let kept = live[trim..<(live.count - trim)]
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
    guard let x = estimate else {
      estimate = rssi
      lastTime = time
      return
    }
    let dt = max(0, time - lastTime)
    let alpha = 1 - pow(1 - coefficient, dt / referenceInterval)
    estimate = x + alpha * (rssi - x)
    lastTime = max(lastTime, time)
  }

  public func value(at time: Timestamp) -> Double? { estimate }
}
