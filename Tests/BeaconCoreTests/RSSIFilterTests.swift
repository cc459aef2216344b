import BeaconCore
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// RSSI smoothing (docs/DESIGN.md, Behaviour): time-aware filters, Kalman by default, AltBeacon's
/// running average and ARMA for parity.
@Suite struct RSSIFilterTests {
  static let defaults = RSSISettings()

  static func make(_ kind: RSSIFilterKind) -> any RSSIFilter { kind.make(settings: defaults) }

  /// Normally distributed noise from the seeded generator (Box-Muller).
  static func gaussian(_ rng: inout SplitMix64, sigma: Double) -> Double {
    let u1 = Double.random(in: Double.ulpOfOne..<1, using: &rng)
    let u2 = Double.random(in: 0..<1, using: &rng)
    return sigma * (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
  }

  /// Feeds `signal(t)` at `rate` Hz from `start` up to and including `end`, and records the filter's
  /// value at each whole second.
  static func run(
    _ filter: inout any RSSIFilter, rate: Double, from start: Double = 0, to end: Double,
    signal: (Double) -> Double
  ) -> [Double: Double] {
    var readings: [Double: Double] = [:]
    let count = Int(((end - start) * rate).rounded())
    for i in 0...count {
      let t = start + Double(i) / rate
      filter.add(signal(t), at: Timestamp(seconds: t))
      let whole = t.rounded()
      if abs(t - whole) < 1e-9 { readings[whole] = filter.value(at: Timestamp(seconds: t)) }
    }
    return readings
  }

  static func stats(_ values: [Double]) -> (mean: Double, variance: Double) {
    let mean = values.reduce(0, +) / Double(values.count)
    return (mean, values.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(values.count))
  }

  // MARK: Unknown values

  @Test(arguments: [
    (127, false), (0, false), (-128, false), (21, false), (-127, true), (-60, true), (20, true),
  ])
  func isKnown(rssi: Int, known: Bool) {
    #expect(RSSI.isKnown(rssi) == known)
  }

  @Test func defaultsFollowTheDesign() {
    #expect(Self.defaults.filter == .kalman)
    #expect(Self.defaults.kalmanMeasurementSigma == 3)
    #expect(Self.defaults.runningAverageWindow == 20)
    #expect(Self.defaults.runningAverageTrim == 0.1)
    #expect(Self.defaults.armaCoefficient == 0.1)
    #expect(Self.make(.kalman) is KalmanRSSIFilter)
    #expect(Self.make(.runningAverage) is RunningAverageRSSIFilter)
    #expect(Self.make(.arma) is ARMARSSIFilter)
  }

  // MARK: Rate independence

  /// A steady, noisy signal (σ 3 dB) at 1 Hz and at 10 Hz: after the same time both settle on the
  /// signal, and agree with each other.
  @Test(arguments: RSSIFilterKind.allCases)
  func steadySignalAtAnyRate(kind: RSSIFilterKind) {
    var results: [Double: (mean: Double, variance: Double)] = [:]
    for rate in [1.0, 10.0] {
      var rng = SplitMix64(seed: 0xAD5_0001)
      var filter = Self.make(kind)
      let readings = Self.run(&filter, rate: rate, to: 120) { _ in -65 + Self.gaussian(&rng, sigma: 3) }
      results[rate] = Self.stats((30...120).compactMap { readings[Double($0)] })
    }
    let slow = results[1]!
    let fast = results[10]!
    #expect(abs(slow.mean + 65) < 1)
    #expect(abs(fast.mean + 65) < 1)
    #expect(abs(slow.mean - fast.mean) < 1)
    // More readings per second never make the output noisier. (With independent noise they make it
    // quieter: each filter averages over the same time, which at 10 Hz holds ten times the
    // readings. Real fading is correlated over short times, so the gain is smaller on the air.)
    #expect(fast.variance < slow.variance * 1.2, "\(kind): \(fast) vs \(slow)")
    #expect(slow.variance < 9 / 2, "\(kind): \(slow)")
  }

  /// A 20 dB step after about 30 s of a steady signal: the filter follows at the same speed at
  /// 1 Hz and at 10 Hz, compared second by second after the step.
  ///
  /// A 1 Hz reading stands for the second before it, so the step comes just after a 1 Hz reading
  /// (29.05 s): at every whole second after it both rates have seen the new level for the same time.
  @Test(arguments: RSSIFilterKind.allCases)
  func stepIsFollowedAtTheSameSpeedAtAnyRate(kind: RSSIFilterKind) throws {
    var traces: [Double: [Double: Double]] = [:]
    for rate in [1.0, 10.0] {
      var filter = Self.make(kind)
      traces[rate] = Self.run(&filter, rate: rate, to: 60) { $0 < 29.05 ? -80 : -60 }
    }
    for after in [1, 2, 3, 5, 8, 13, 20] {
      let t = Double(30 + after)
      let slow = try #require(traces[1]?[t])
      let fast = try #require(traces[10]?[t])
      // 1.5 dB of a 20 dB step: the 1 Hz filter sees the change in whole-second steps only.
      #expect(abs(slow - fast) <= 1.5, "\(kind) \(after) s after the step: 1 Hz \(slow), 10 Hz \(fast)")
    }
    // And both get there.
    #expect(abs(traces[1]![60]! + 60) < 1)
    #expect(abs(traces[10]![60]! + 60) < 1)
    // Half-way is reached neither at once nor late, and within a second of each other. (Kalman
    // takes about 2 s, ARMA about 7 s: 0.9^t = 0.5, the running average about 10 s.)
    func halfway(_ rate: Double) -> Int? { (30...60).first { traces[rate]![Double($0)]! >= -70 } }
    let slowHalfway = try #require(halfway(1))
    let fastHalfway = try #require(halfway(10))
    #expect((31...42).contains(slowHalfway), "\(kind): \(slowHalfway)")
    #expect(abs(slowHalfway - fastHalfway) <= 1, "\(kind): 1 Hz \(slowHalfway), 10 Hz \(fastHalfway)")
  }

  // MARK: Kalman

  @Test func kalmanReducesVarianceOfNoisyInput() {
    var rng = SplitMix64(seed: 0xAD5_0002)
    var filter = Self.make(.kalman)
    var inputs: [Double] = []
    var outputs: [Double] = []
    for second in 0..<600 {
      let input = -70 + Self.gaussian(&rng, sigma: 3)
      filter.add(input, at: Timestamp(seconds: Double(second)))
      if second >= 30 {
        inputs.append(input)
        outputs.append(filter.value(at: Timestamp(seconds: Double(second)))!)
      }
    }
    let inputStats = Self.stats(inputs)
    let outputStats = Self.stats(outputs)
    #expect(abs(outputStats.mean + 70) < 0.5)
    // Steady state for σ = 3 dB and 1 dB²/s at 1 Hz: error variance ≈ 2.5 dB² against 9.
    #expect(
      outputStats.variance < inputStats.variance / 2.5,
      "in \(inputStats.variance), out \(outputStats.variance)")
  }

  @Test func kalmanBasics() {
    var filter = KalmanRSSIFilter(measurementNoise: 9, processNoisePerSecond: 1)
    #expect(filter.value(at: .zero) == nil)
    filter.add(-50, at: .zero)
    #expect(filter.value(at: .zero) == -50)
    filter.add(.nan, at: Timestamp(seconds: 1))
    filter.add(.infinity, at: Timestamp(seconds: 1))
    #expect(filter.value(at: Timestamp(seconds: 1)) == -50)
    // First step at 1 Hz: prior variance 9 + 1, gain 10/19.
    filter.add(-60, at: Timestamp(seconds: 1))
    let expected = -50 + (10.0 / 19.0) * -10
    #expect(abs(filter.value(at: Timestamp(seconds: 1))! - expected) < 1e-9)
    // A reading from the past or at the same instant moves the estimate only a little.
    let before = filter.value(at: Timestamp(seconds: 1))!
    filter.add(-90, at: Timestamp(seconds: 0.5))
    let after = filter.value(at: Timestamp(seconds: 1))!
    #expect(after < before && before - after < 0.1)
  }

  // MARK: Running average (AltBeacon RunningAverageRssiFilter)

  static func runningAverage(_ samples: [(Double, Double)], at time: Double) -> Double? {
    var filter = RunningAverageRSSIFilter(window: 20, trimFraction: 0.1)
    for (t, rssi) in samples { filter.add(rssi, at: Timestamp(seconds: t)) }
    return filter.value(at: Timestamp(seconds: time))
  }

  @Test func runningAverageOneMeasurement() {
    // android-beacon-library RunningAverageRssiFilterTest.initTest1: -50 alone gives -50.0.
    #expect(Self.runningAverage([(0, -50)], at: 0) == -50)
  }

  @Test func runningAverageTrimsAtEachEnd() {
    // Ten samples: AltBeacon drops 10/10 + 1 = 2 at each end, leaving the six -70s; the plain mean
    // would be -60.5.
    let samples = [-20.0, -25, -70, -70, -70, -70, -70, -70, -70, -70].enumerated().map { (Double($0), $1) }
    #expect(Self.runningAverage(samples, at: 9) == -70)
    // Two samples: no trimming. Three: the middle one.
    #expect(Self.runningAverage([(0, -50), (1, -60)], at: 1) == -55)
    #expect(Self.runningAverage([(0, -50), (1, -90), (2, -60)], at: 2) == -60)
    // Twenty samples -1…-20: 3 dropped at each end, the mean of -4…-17.
    let twenty = (1...20).map { (Double($0) * 0.5, -Double($0)) }
    #expect(Self.runningAverage(twenty, at: 10) == -10.5)
  }

  @Test func runningAverageWindowIsTwentySeconds() {
    let samples: [(Double, Double)] = [(0, -90), (10, -60), (15, -60)]
    // At 19.9 s the first sample is still inside (age < 20 s); three samples give the median.
    #expect(Self.runningAverage(samples, at: 19.9) == -60)
    #expect(Self.runningAverage([(0, -90), (10, -60)], at: 19.9) == -75)
    // At 20 s it has expired (AltBeacon keeps samples younger than the window).
    #expect(Self.runningAverage([(0, -90), (10, -60)], at: 20) == -60)
    // Nothing left inside the window: the last measurement stands in.
    #expect(Self.runningAverage([(0, -90), (10, -60)], at: 100) == -60)
  }

  @Test(arguments: [0.0, 0.25, 0.5, 0.6, 1.0, 5.0, -1.0, .nan, .infinity])
  func runningAverageSurvivesAnyTrimFraction(trim: Double) throws {
    var filter = RunningAverageRSSIFilter(window: 20, trimFraction: trim)
    for n in 1...7 {
      filter.add(-Double(n * 10), at: Timestamp(seconds: Double(n)))
      let value = try #require(filter.value(at: Timestamp(seconds: Double(n))))
      #expect(value <= -10 && value >= -70)
    }
  }

  // MARK: ARMA (AltBeacon ArmaRssiFilter, c = 0.1)

  @Test func armaSteps() {
    var filter = ARMARSSIFilter(coefficient: 0.1, referenceInterval: 1)
    // android-beacon-library ArmaRssiFilterTest.initTest1: the first measurement is the value.
    filter.add(-50, at: .zero)
    #expect(filter.value(at: .zero) == -50)
    // One reference interval later, AltBeacon's step: x − c·(x − new) = -50 − 0.1·10.
    filter.add(-60, at: Timestamp(seconds: 1))
    #expect(abs(filter.value(at: .zero)! + 51) < 1e-9)

    // The same second in ten readings gives the same step.
    var fast = ARMARSSIFilter(coefficient: 0.1, referenceInterval: 1)
    fast.add(-50, at: .zero)
    for i in 1...10 { fast.add(-60, at: Timestamp(seconds: Double(i) / 10)) }
    #expect(abs(fast.value(at: .zero)! + 51) < 1e-9)

    // A reading at the same instant, or a non-finite one, changes nothing.
    fast.add(-100, at: Timestamp(seconds: 1))
    fast.add(.nan, at: Timestamp(seconds: 2))
    #expect(abs(fast.value(at: .zero)! + 51) < 1e-9)
  }
}
