import BeaconCore
import BeaconCrypto

/// The stated limit on a cold search (docs/authentication.md, "The time a cold search may take"):
/// the whole-tolerance search for one EID no pairing sent, over every EID pairing, at the pace of
/// `EIDSearchService`, must finish within `maximumSeconds`. A configuration whose worst search
/// would take longer could leave a beacon whose clock fell behind unresolved for hours, so every
/// door that adds an EID pairing or changes the tolerance refuses it with `refusal`: the daemon's
/// start and SIGHUP, the store's `pairByKey` (D-Bus `PairWithKey`, `pair`, `provision`) and the
/// fleet's desired document.
public enum ColdSearchLimit {
  /// Ten minutes: a beacon back after a power loss (its clock up to a day behind) resolves within
  /// a short trip. It lets through the default day of tolerance with up to 694 pairings at K = 0,
  /// or 10,000 at K = 4 and above (a week: 99 at K = 0, 10,000 at K = 7 and above), and refuses
  /// the caps (10,000 pairings at K = 0 and a week: 16.8 hours).
  public static let maximumSeconds: Int64 = 600

  /// The search budget: the AES operations a second `EIDSearchService` spends on searches.
  public static let operationsPerSecond: Int64 = 200_000

  /// A pairing rotating faster than every 2^10 s (17 minutes) is named fast-rotating in the
  /// refusal: at K = 10 and above, even 10,000 pairings and a week of tolerance take a minute.
  public static let fastRotation: UInt8 = 10

  /// The tolerance in whole seconds as the resolver takes it (`KeyAuthenticator`).
  static func toleranceSeconds(_ eidClockTolerance: Double) -> Int64 {
    guard !eidClockTolerance.isNaN else { return 0 }
    return Int64(min(max(eidClockTolerance, 0), Double(EIDResolver.Configuration.maximumTolerance)))
  }

  /// The AES operations of the worst cold search: the sum over the EID pairings of what a
  /// whole-tolerance search costs for each (`EIDResolver.searchOperations`).
  public static func worstOperations(eidClockTolerance: Double, rotationExponents: [UInt8]) -> Int64 {
    EIDResolver.searchOperations(
      tolerance: toleranceSeconds(eidClockTolerance),
      rotationExponents: rotationExponents.compactMap(RotationExponent.init(rawValue:)))
  }

  /// The seconds the worst cold search takes at the search budget.
  public static func worstSeconds(eidClockTolerance: Double, rotationExponents: [UInt8]) -> Double {
    Double(worstOperations(eidClockTolerance: eidClockTolerance, rotationExponents: rotationExponents))
      / Double(operationsPerSecond)
  }

  /// The one sentence every door refuses with, or nil when the worst search fits the limit.
  public static func refusal(eidClockTolerance: Double, rotationExponents: [UInt8]) -> String? {
    let operations = worstOperations(
      eidClockTolerance: eidClockTolerance, rotationExponents: rotationExponents)
    guard operations > maximumSeconds * operationsPerSecond else { return nil }
    let tolerance = toleranceSeconds(eidClockTolerance)
    let fast = rotationExponents.filter { $0 < fastRotation }.count
    let seconds = (operations + operationsPerSecond - 1) / operationsPerSecond
    return
      "[ActiveBeacon] eidClockTolerance = \(tolerance) s with \(rotationExponents.count) Eddystone-EID pairing(s), \(fast) of them fast-rotating (K below \(fastRotation)), makes one cold search take up to \(duration(seconds)) at the search budget of \(operationsPerSecond) AES operations a second, over the limit of \(duration(maximumSeconds)) (docs/authentication.md); lower eidClockTolerance, or pair fewer fast-rotating beacons or give them a larger rotation exponent K"
  }

  /// "16 h 48 min", "14 min 24 s", "52 s".
  static func duration(_ seconds: Int64) -> String {
    let hours = seconds / 3_600
    let minutes = seconds % 3_600 / 60
    let rest = seconds % 60
    if hours > 0 { return minutes > 0 ? "\(hours) h \(minutes) min" : "\(hours) h" }
    if minutes > 0 { return rest > 0 ? "\(minutes) min \(rest) s" : "\(minutes) min" }
    return "\(rest) s"
  }
}

extension Store {
  /// The refusal (`ColdSearchLimit.refusal`) of the store's EID pairings searched with
  /// `eidClockTolerance`, or nil: the daemon's start and a SIGHUP reload ask it before they run
  /// with a tolerance.
  /// `apply` runs when there is none, within the same call on the store: a reload's new tolerance
  /// takes effect before any pairing by key is checked (`pairByKey` reads the tolerance in its
  /// own call), so the two cannot pass each other.
  public func coldSearchRefusal(
    eidClockTolerance: Double, apply: @Sendable () -> Void = {}
  ) throws(StoreError) -> String? {
    let exponents = try keyPairings().compactMap(\.rotationExponent)
    let refusal = ColdSearchLimit.refusal(eidClockTolerance: eidClockTolerance, rotationExponents: exponents)
    if refusal == nil { apply() }
    return refusal
  }
}
