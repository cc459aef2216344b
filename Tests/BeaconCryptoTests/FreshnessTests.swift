import BeaconCrypto
import BeaconTestSupport
import Foundation
import Testing

/// A resolvable private address proves its device only while fresh (docs/authentication.md,
/// "What an RPA proves"), and a random address matches the box's IRKs by chance at most as often
/// as the cap allows.
@Suite struct RPAFreshnessTests {
  static let vectors = OracleVectors.shared
  static let first = address(vectors.rpa.addresses[0].address)
  static let rotated = address(vectors.rpa.rotated.address)

  static func resolver(maxAge: Int64 = 1_800) -> RPAResolver {
    var resolver = RPAResolver(maxAge: maxAge)
    for (index, irk) in vectors.rpa.irks.enumerated() { resolver.add(id: KeyPairingID(index), irk: key(irk)) }
    return resolver
  }

  @Test func anAddressCopiedAfterMaxAgeIsAReplay() {
    var resolver = Self.resolver()
    #expect(resolver.resolve(address: Self.first, atSeconds: 1_000) == .resolved(0))
    #expect(resolver.resolve(address: Self.first, atSeconds: 2_800) == .resolved(0), "at rpaMaxAge exactly")
    // Two days later, the same address with nothing else: a copy.
    #expect(
      resolver.resolve(address: Self.first, atSeconds: 1_000 + 2 * 86_400)
        == .replay(0, .expired(firstHeard: 1_000)))
    #expect(resolver.statistics.replaysRefused == 1)
    #expect(resolver.statistics.resolved == 2)
  }

  @Test func anAddressOlderThanANewerOneOfTheSameDeviceIsAReplay() {
    var resolver = Self.resolver()
    #expect(resolver.resolve(address: Self.first, atSeconds: 0) == .resolved(0))
    #expect(resolver.resolve(address: Self.rotated, atSeconds: 900) == .resolved(0), "the device rotated")
    #expect(
      resolver.resolve(address: Self.first, atSeconds: 901)
        == .replay(0, .superseded(firstHeard: 0, newestFirstHeard: 900)))
    #expect(
      resolver.resolve(address: Self.rotated, atSeconds: 902) == .resolved(0), "the newest still proves it")
    // Another device's address is not superseded by this one's.
    let other = address(Self.vectors.rpa.addresses[1].address)
    #expect(resolver.resolve(address: other, atSeconds: 903) == .resolved(1))
  }

  @Test func whatWasHeardSurvivesAReloadOfThePairings() {
    var running = Self.resolver()
    #expect(running.resolve(address: Self.first, atSeconds: 0) == .resolved(0))
    // The store read again: the same pairings, taken in place.
    running.reconcile(with: Self.resolver())
    #expect(running.resolve(address: Self.first, atSeconds: 5_000) == .replay(0, .expired(firstHeard: 0)))
    // Without it, the old address would pass as new: the reason to carry it over.
    var forgetful = Self.resolver()
    #expect(forgetful.resolve(address: Self.first, atSeconds: 5_000) == .resolved(0))
  }

  /// At the cap, 167 IRKs against 60,000 random addresses of the resolvable form: the chance of a
  /// false match is 167 / 2^24 ≈ 1.0e-5 per address, so about 0.6 expected; more than 5 would be
  /// a chance of under 1e-5 were the bound right.
  @Test func randomAddressesAgainstTheCapMatchAtTheStatedRate() throws {
    #expect(RPAResolver.maximumPairings == 167)
    #expect(RPAResolver.falseMatchProbability(pairings: RPAResolver.maximumPairings) <= 1e-5)
    #expect(RPAResolver.falseMatchProbability(pairings: RPAResolver.maximumPairings + 1) > 1e-5)
    var generator = SplitMix(seed: 0x5EED)
    var resolver = RPAResolver(capacity: 1)
    for index in 0..<RPAResolver.maximumPairings {
      let bytes = (0..<16).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
      resolver.add(
        id: KeyPairingID(rawValue: Int64(index)), irk: try bytes.withUnsafeBytes { try AES128Key(bytes: $0) })
    }
    var matches = 0
    let tried = 60_000
    for _ in 0..<tried {
      let random = 0x40_0000_000000 | (generator.next() & 0x3F_FFFF_FFFFFF)
      if resolver.resolve(address: random) != nil { matches += 1 }
    }
    #expect(resolver.statistics.blockEncryptions == tried * RPAResolver.maximumPairings)
    #expect(matches <= 5, "\(matches) false matches in \(tried)")
  }
}

/// A small seeded generator: the same addresses and keys on every run.
struct SplitMix: RandomNumberGenerator {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

/// Box time follows a step of the wall clock, and a pairing set on either side of the step keeps
/// resolving.
@Suite struct EIDClockStepTests {
  static let vectors = OracleVectors.shared
  static let box: Int64 = 1_800_000_000

  static func pairing(_ id: Int64, _ v: OracleVectors.EIDVector, clockAt box: Int64) -> EIDPairing {
    EIDPairing(
      id: KeyPairingID(rawValue: id), identityKey: key(v.identityKey),
      rotationExponent: exponent(v.rotationExponent),
      beaconClock: v.beaconClock, atBoxSeconds: box)
  }

  static func eid(_ v: OracleVectors.EIDVector, clock: UInt32) -> UInt64 {
    EddystoneEID.eid(
      identityKey: key(v.identityKey), rotationExponent: exponent(v.rotationExponent), clock: clock)
  }

  /// A beacon tracked before the box's clock jumped two days ahead: box time jumps with it, and
  /// the beacon (whose clock did not jump) resolves at once, with no search.
  @Test(arguments: [2 * 86_400, -2 * 86_400] as [Int64])
  func aTrackedBeaconResolvesAcrossAStep(step: Int64) {
    let v = Self.vectors.eid[9]  // K = 12
    var resolver = EIDResolver(configuration: .init(tolerance: 86_400))
    resolver.add(Self.pairing(1, v, clockAt: Self.box))
    #expect(
      resolver.resolve(eid: Self.eid(v, clock: v.beaconClock + 10), atBoxSeconds: Self.box + 10)
        != .unknown(.notPaired))
    resolver.clockStepped(by: step)
    let later = v.beaconClock + 40_000  // ten windows on: not in the table
    let searches = resolver.statistics.searches
    #expect(
      resolver.resolve(eid: Self.eid(v, clock: later), atBoxSeconds: Self.box + 40_000 + step)
        == .resolved(1, window: later >> 12))
    #expect(resolver.statistics.searches == searches + 1, "one search, within the moved offset's window")
    #expect(resolver.tracking(of: 1)?.clockOffset == Int64(v.beaconClock) - Self.box - step)
  }

  /// A pairing whose offset was set against the clock as the step made it (stored before a boot
  /// whose clock was two days behind, until NTP came): the unmoved offset is the right one, and
  /// is tried too.
  @Test func aPairingSetAgainstTheCorrectedClockResolvesAfterTheStep() {
    let v = Self.vectors.eid[9]
    var resolver = EIDResolver(configuration: .init(tolerance: 86_400))
    // Paired at the right time; the box boots two days behind and is corrected by +2 days.
    resolver.add(Self.pairing(1, v, clockAt: Self.box))
    let behind = Self.box - 2 * 86_400
    #expect(
      resolver.resolve(eid: Self.eid(v, clock: v.beaconClock + 100), atBoxSeconds: behind + 100)
        == .unknown(.notPaired))
    resolver.clockStepped(by: 2 * 86_400)
    #expect(
      resolver.resolve(eid: Self.eid(v, clock: v.beaconClock + 200), atBoxSeconds: Self.box + 200)
        == .resolved(1, window: (v.beaconClock + 200) >> 12))
    #expect(resolver.tracking(of: 1)?.clockOffset == Int64(v.beaconClock) - Self.box)
  }

  /// `replay` counts its search budget by record: the same strangers' EIDs cost the same
  /// whether the capture packs them 10 ms apart or spreads them 100 s apart. A small budget (1,000
  /// operations a second, 10 s of burst, 1,000 a record) against one pairing at K = 4, whose
  /// search costs 10,810.
  @Test func aBudgetByRecordIgnoresTheCapturesTimes() {
    let v = Self.vectors.eid[0]
    func resolver(byRecord: Bool) -> EIDResolver {
      var configuration = EIDResolver.Configuration(tolerance: 86_400)
      configuration.searchOperationsPerSecond = 1_000
      configuration.searchBurstSeconds = 10
      var resolver = EIDResolver(configuration: configuration)
      resolver.add(
        EIDPairing(id: 1, identityKey: key(v.identityKey), rotationExponent: exponent(4), clockOffset: 0))
      if byRecord { resolver.chargeSearchesPerLookup(1_000) }
      return resolver
    }
    func spent(spacing: Double, byRecord: Bool) -> (operations: Int, searches: Int) {
      var r = resolver(byRecord: byRecord)
      for record in 0..<40 {
        let t = Self.box + Int64((Double(record) * spacing).rounded(.down))
        _ = r.resolve(eid: 0xDEAD_0000 + UInt64(record), atBoxSeconds: t)
      }
      return (r.statistics.blockEncryptions + r.statistics.keyExpansions, r.statistics.searches)
    }
    let packed = spent(spacing: 0.01, byRecord: true)
    let spread = spent(spacing: 100, byRecord: true)
    #expect(packed.operations == spread.operations)
    #expect(packed.searches == spread.searches)
    // Bounded by the records: the burst, 40 records' worth, and one search over what was left.
    let oneSearch = Int(EIDResolver.searchOperations(tolerance: 86_400, rotationExponent: exponent(4)))
    #expect(oneSearch == 10_810)
    #expect(packed.operations <= 10_000 + 40 * 1_000 + oneSearch)
    // By time, spreading the same records bought about a search each: the cost grew with the
    // capture's timestamps.
    let byTime = spent(spacing: 100, byRecord: false)
    #expect(byTime.searches >= 30 && byTime.searches > 3 * packed.searches)
  }
}
