#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// How near a beacon is, binned as CoreLocation bins it.
public enum Proximity: String, Hashable, Sendable, Codable, Comparable {
  case immediate
  case near
  case far
  case unknown

  private var order: Int {
    switch self {
    case .immediate: 0
    case .near: 1
    case .far: 2
    case .unknown: 3
    }
  }

  public static func < (lhs: Proximity, rhs: Proximity) -> Bool { lhs.order < rhs.order }
}

/// Distance from RSSI and the beacon's calibrated power at 1 m.
///
/// The default is AltBeacon's CurveFittedDistanceCalculator with its default coefficients
/// (Nexus 5 fit: 0.42093, 6.9476, 0.54992): `d = A·(rssi/power)^B + C` when `rssi/power ≥ 1`,
/// and `(rssi/power)^10` below (a signal stronger than the 1 m power).
public struct DistanceModel: Hashable, Sendable {
  public var coefficientA: Double = 0.42093
  public var coefficientB: Double = 6.9476
  public var coefficientC: Double = 0.54992
  /// Proximity bins, metres: CoreLocation reports immediate within about half a metre and near
  /// within a few metres.
  public var immediateWithin: Double = 0.5
  public var nearWithin: Double = 3.0

  public init() {}

  /// Metres, or nil without a usable RSSI or calibrated power.
  public func distance(rssi: Double, powerAt1m: Int) -> Double? {
    // 0 means an unknown RSSI (and AltBeacon returns -1, "cannot determine", for it); a positive
    // value or power cannot come from the curve's domain.
    guard powerAt1m < 0, rssi < 0, rssi.isFinite else { return nil }
    let ratio = rssi / Double(powerAt1m)
    if ratio < 1 { return pow(ratio, 10) }
    return coefficientA * pow(ratio, coefficientB) + coefficientC
  }

  public func proximity(distance: Double?) -> Proximity {
    guard let d = distance, d.isFinite, d >= 0 else { return .unknown }
    if d < immediateWithin { return .immediate }
    if d < nearWithin { return .near }
    return .far
  }
}
