import BeaconCrypto
import BeaconTestSupport
import Foundation
import Testing

@Suite struct EIDResolverTests {
  static let vectors = OracleVectors.shared
  static let box: Int64 = 1_800_000_000

  static func resolver(_ scenario: OracleVectors.Scenario) -> EIDResolver {
    var resolver = EIDResolver(configuration: .init(tolerance: scenario.tolerance))
    for (index, p) in scenario.pairings.enumerated() {
      resolver.add(
        EIDPairing(
          id: KeyPairingID(index), identityKey: key(p.identityKey),
          rotationExponent: exponent(p.rotationExponent),
          beaconClock: p.beaconClock, atBoxSeconds: p.boxTime))
    }
    return resolver
  }

  /// Every oracle scenario: rotation across the temporary key's roll-over, drift either way, the
  /// tolerance's edges, replay, a wrong key, two pairings.
  @Test(arguments: vectors.eidScenarios.map(\.name))
  func resolvesAsTheOracleSays(_ name: String) {
    let scenario = Self.vectors.eidScenarios.first { $0.name == name }!
    var resolver = Self.resolver(scenario)
    for (step, s) in scenario.sightings.enumerated() {
      let got = resolver.resolve(eid: uint64(s.eid), atBoxSeconds: s.boxTime)
      let context = Comment(rawValue: "\(name) step \(step): \(scenario.about)")
      switch s.outcome {
      case "resolved": #expect(got == .resolved(KeyPairingID(s.pairing!), window: s.window!), context)
      case "replay":
        #expect(
          got == .replay(KeyPairingID(s.pairing!), window: s.window!, heardWindow: s.trackedWindow!), context)
      default:
        guard case .unknown = got else {
          Issue.record("\(got), expected unknown; \(context.rawValue)")
          continue
        }
      }
    }
  }

  @Test func aSteadyStreamCostsOneLookupAndNoAES() {
    let scenario = Self.vectors.eidScenarios.first { $0.name == "rollover" }!
    var resolver = Self.resolver(scenario)
    let first = scenario.sightings[0]
    _ = resolver.resolve(eid: uint64(first.eid), atBoxSeconds: first.boxTime)
    let settled = resolver.statistics
    // One advertisement a second for the rest of the window: all from the table, no AES at all.
    for second in Int64(1)...200 {
      #expect(
        resolver.resolve(eid: uint64(first.eid), atBoxSeconds: first.boxTime + second)
          == .resolved(0, window: 63))
    }
    #expect(resolver.statistics.cacheHits == settled.cacheHits + 200)
    #expect(resolver.statistics.searches == settled.searches)
    #expect(resolver.statistics.blockEncryptions == settled.blockEncryptions)
    #expect(resolver.statistics.keyExpansions == settled.keyExpansions)
    #expect(resolver.tableCount == 3, "the previous, current and next windows")
  }

  @Test func theFirstEIDOfAPairingAtItsExpectedClockIsOneSearchFoundAtOnce() {
    let scenario = Self.vectors.eidScenarios.first { $0.name == "rollover" }!
    var resolver = Self.resolver(scenario)
    let first = scenario.sightings[0]
    _ = resolver.resolve(eid: uint64(first.eid), atBoxSeconds: first.boxTime)
    #expect(resolver.statistics.searches == 1)
    // Found in the expected window (one temporary key, one EID: 2 blocks), then the table's three
    // windows (62, 63, 64: 3 blocks); 64 starts at 65536, the roll-over: one more temporary key.
    #expect(resolver.statistics.blockEncryptions == 2 + 3 + 1)
    #expect(resolver.statistics.keyExpansions == 2)
  }

  @Test func rotatingAcrossTheTemporaryKeyRollOverCostsOneWindowAndOneKey() {
    let scenario = Self.vectors.eidScenarios.first { $0.name == "rollover" }!
    var resolver = Self.resolver(scenario)
    var before = resolver.statistics
    for s in scenario.sightings {
      before = resolver.statistics
      #expect(
        resolver.resolve(eid: uint64(s.eid), atBoxSeconds: s.boxTime) == .resolved(0, window: s.window!))
      if s.window == 64 && s.beaconClock < 65536 + 60 {
        // The first sighting of window 64 (clock 65536..65595): a table hit; the table moves to
        // 63, 64, 65 -> 64 is the current, 65 is new (same temporary key as 64, computed at the
        // roll-over already): one block.
        #expect(resolver.statistics.cacheHits == before.cacheHits + 1)
        #expect(resolver.statistics.searches == before.searches)
        #expect(resolver.statistics.blockEncryptions - before.blockEncryptions <= 3)
      }
    }
    #expect(resolver.statistics.searches == 1, "only the first EID was searched for")
    #expect(resolver.statistics.resolved == scenario.sightings.count)
  }

  @Test func aReplayIsRefusedAndCountedAndSurvivesARestartThroughTracking() {
    let scenario = Self.vectors.eidScenarios.first { $0.name == "replay" }!
    var resolver = Self.resolver(scenario)
    let s = scenario.sightings
    _ = resolver.resolve(eid: uint64(s[0].eid), atBoxSeconds: s[0].boxTime)
    _ = resolver.resolve(eid: uint64(s[1].eid), atBoxSeconds: s[1].boxTime)
    #expect(
      resolver.resolve(eid: uint64(s[2].eid), atBoxSeconds: s[2].boxTime)
        == .replay(0, window: s[2].window!, heardWindow: s[1].window!))
    #expect(resolver.statistics.replaysRefused == 1)
    #expect(
      resolver.resolve(eid: uint64(s[3].eid), atBoxSeconds: s[3].boxTime)
        == .replay(0, window: s[3].window!, heardWindow: s[1].window!))
    #expect(resolver.statistics.replaysRefused == 2)

    // A restarted resolver given the stored tracking refuses the same replay.
    let tracking = resolver.tracking(of: 0)!
    #expect(tracking.heardWindow == s[1].window!)
    let p = scenario.pairings[0]
    var restarted = EIDResolver()
    restarted.add(
      EIDPairing(
        id: 0, identityKey: key(p.identityKey), rotationExponent: exponent(p.rotationExponent),
        clockOffset: tracking.clockOffset, heardWindow: tracking.heardWindow))
    #expect(
      restarted.resolve(eid: uint64(s[2].eid), atBoxSeconds: s[2].boxTime + 5)
        == .replay(0, window: s[2].window!, heardWindow: s[1].window!))
    #expect(restarted.statistics.replaysRefused == 1)
  }

  @Test func aCachedEIDHeardAfterTheToleranceIsNotResolved() {
    let scenario = Self.vectors.eidScenarios.first { $0.name == "rollover" }!
    var resolver = Self.resolver(scenario)
    let first = scenario.sightings[0]
    #expect(resolver.resolve(eid: uint64(first.eid), atBoxSeconds: first.boxTime) == .resolved(0, window: 63))
    // The same EID two days later (a recording played back): in the table, but its window is
    // more than one day from the beacon's expected clock.
    #expect(
      resolver.resolve(eid: uint64(first.eid), atBoxSeconds: first.boxTime + 2 * 86_400)
        == .unknown(.outsideTolerance))
    #expect(resolver.statistics.resolved == 1)
  }

  @Test func anUnknownEIDIsSearchedOnceThenAnsweredFromTheNegativeCache() {
    let scenario = Self.vectors.eidScenarios.first { $0.name == "wrong-key" }!
    var resolver = Self.resolver(scenario)
    let s = scenario.sightings[0]
    #expect(resolver.resolve(eid: uint64(s.eid), atBoxSeconds: s.boxTime) == .unknown(.notPaired))
    let afterSearch = resolver.statistics
    #expect(afterSearch.searches == 1)
    // The whole tolerance was searched, within the documented bound.
    let bound = EIDResolver.searchOperations(tolerance: 86_400, rotationExponent: exponent(10))
    #expect(Int64(afterSearch.blockEncryptions + afterSearch.keyExpansions) <= bound)
    #expect(afterSearch.blockEncryptions >= 2 * 86_400 / 1024, "every window of the tolerance was tried")
    for second in Int64(1)...10 {
      #expect(
        resolver.resolve(eid: uint64(s.eid), atBoxSeconds: s.boxTime + second) == .unknown(.recentlyUnknown))
    }
    #expect(resolver.statistics.blockEncryptions == afterSearch.blockEncryptions)
    #expect(resolver.statistics.negativeHits == 10)
    // After the negative cache's time, it is searched again.
    #expect(resolver.resolve(eid: uint64(s.eid), atBoxSeconds: s.boxTime + 301) == .unknown(.notPaired))
    #expect(resolver.statistics.searches == 2)
  }

  @Test func aFloodOfRandomEIDsSpendsNoMoreThanTheBudget() {
    var configuration = EIDResolver.Configuration()
    configuration.searchOperationsPerSecond = 5_000
    configuration.searchBurstSeconds = 2
    var resolver = EIDResolver(configuration: configuration)
    let identity = key("000102030405060708090a0b0c0d0e0f")
    for id in 0..<10 {
      resolver.add(
        EIDPairing(
          id: KeyPairingID(id), identityKey: identity, rotationExponent: exponent(10),
          clockOffset: Int64(id) * 1_000_000))
    }
    var generator = SystemRandomNumberGenerator()
    let seconds: Int64 = 20
    for second in 0..<seconds {
      for _ in 0..<100 { _ = resolver.resolve(eid: generator.next(), atBoxSeconds: Self.box + second) }
    }
    let perSearch = 10 * EIDResolver.searchOperations(tolerance: 86_400, rotationExponent: exponent(10))
    let spent = Int64(resolver.statistics.blockEncryptions + resolver.statistics.keyExpansions)
    // The burst, plus the rate for the time that passed, plus the one search that may overdraw.
    #expect(spent <= 5_000 * 2 + 5_000 * seconds + perSearch)
    #expect(resolver.statistics.searchesDeferred > 1_500)
    #expect(resolver.statistics.searches + resolver.statistics.searchesDeferred == 100 * Int(seconds))
  }

  @Test func theSearchCostBoundIsAsDocumented() {
    #expect(EIDResolver.searchOperations(tolerance: 86_400, rotationExponent: exponent(10)) == 178)
    #expect(EIDResolver.searchOperations(tolerance: 86_400, rotationExponent: exponent(15)) == 15)
    #expect(EIDResolver.searchOperations(tolerance: 86_400, rotationExponent: exponent(0)) == 172_810)
    #expect(EIDResolver.searchOperations(tolerance: 0, rotationExponent: exponent(10)) == 6)
  }

  @Test func extremeOffsetsAndTolerancesNeitherTrapNorResolve() {
    var configuration = EIDResolver.Configuration(tolerance: .max)
    #expect(configuration.tolerance == EIDResolver.Configuration.maximumTolerance)
    configuration.tolerance = -5
    #expect(configuration.tolerance == 0)
    configuration.searchOperationsPerSecond = .max
    configuration.searchBurstSeconds = .max
    var saturated = EIDResolver(configuration: configuration)
    #expect(saturated.resolve(eid: 1, atBoxSeconds: .min) == .unknown(.notPaired))
    #expect(saturated.resolve(eid: 2, atBoxSeconds: .max) == .unknown(.notPaired))
    let identity = key("000102030405060708090a0b0c0d0e0f")
    let eid = EddystoneEID.eid(identityKey: identity, rotationExponent: exponent(0), clock: .max)
    for (offsets, times) in [
      ([Int64.max, 1 << 62], [Int64.max, 1 << 62]),
      ([Int64.min], [Int64.min, -(1 << 62), Int64.min]),
    ] {
      var resolver = EIDResolver(configuration: .init(tolerance: 3_600))
      for (id, offset) in offsets.enumerated() {
        resolver.add(
          EIDPairing(
            id: KeyPairingID(id), identityKey: identity, rotationExponent: exponent(0), clockOffset: offset))
      }
      for t in times { #expect(resolver.resolve(eid: eid, atBoxSeconds: t) == .unknown(.notPaired)) }
      #expect(resolver.statistics.blockEncryptions == 0, "no expected clock is within 32 bits")
    }
  }

  @Test func removingAPairingDropsItsEIDs() {
    let scenario = Self.vectors.eidScenarios.first { $0.name == "two-pairings" }!
    var resolver = Self.resolver(scenario)
    let s = scenario.sightings
    #expect(
      resolver.resolve(eid: uint64(s[0].eid), atBoxSeconds: s[0].boxTime)
        == .resolved(0, window: s[0].window!))
    #expect(resolver.tableCount == 3)
    resolver.remove(id: 0)
    #expect(resolver.tableCount == 0)
    #expect(resolver.pairingIDs == [1])
    #expect(resolver.resolve(eid: uint64(s[0].eid), atBoxSeconds: s[0].boxTime + 1) == .unknown(.notPaired))
  }

  @Test func theEncryptedTLMOfAResolvedBeaconOpensWithItsTrackedClock() throws {
    let v = Self.vectors.etlm.first { $0.valid }!
    var resolver = EIDResolver()
    let identity = key(v.identityKey)
    let k = exponent(v.rotationExponent)
    resolver.add(
      EIDPairing(
        id: 7, identityKey: identity, rotationExponent: k, beaconClock: v.beaconClock - 100,
        atBoxSeconds: Self.box))
    let eid = EddystoneEID.eid(identityKey: identity, rotationExponent: k, clock: v.beaconClock)
    #expect(
      resolver.resolve(eid: eid, atBoxSeconds: Self.box + 100) == .resolved(7, window: v.beaconClock >> 10))
    let frame = try EncryptedTLM(serviceData: bytes(v.serviceData))
    #expect(resolver.openTLM(frame, of: 7, atBoxSeconds: Self.box + 101).map(hex) == v.plainTLM)
    #expect(resolver.openTLM(frame, of: 8, atBoxSeconds: Self.box + 101) == nil)
    #expect(resolver.openTLM(frame, of: 7, atBoxSeconds: Self.box + 101 + 5 * 1024) == nil)
  }
}

@Suite struct RPAResolverTests {
  static let vectors = OracleVectors.shared

  static func resolver(capacity: Int = 4_096) -> RPAResolver {
    var resolver = RPAResolver(capacity: capacity)
    for (index, irk) in vectors.rpa.irks.enumerated() { resolver.add(id: KeyPairingID(index), irk: key(irk)) }
    return resolver
  }

  @Test(arguments: vectors.rpa.addresses.map(\.address))
  func resolvesAsTheOracleSays(_ text: String) {
    let v = Self.vectors.rpa.addresses.first { $0.address == text }!
    var resolver = Self.resolver()
    #expect(resolver.resolve(address: address(v.address)) == v.pairing.map(KeyPairingID.init), "\(v.why)")
  }

  @Test func eachAddressCostsAESOnceThenALookup() {
    var resolver = Self.resolver()
    let spec = address("70:81:94:0D:FB:AA")
    let stranger = address("70:81:94:0D:FB:AB")
    #expect(resolver.resolve(address: spec) == 0)
    #expect(resolver.resolve(address: stranger) == nil)
    let spent = resolver.statistics.blockEncryptions
    #expect(spent == 1 + 2, "the sample resolves with the first IRK; the stranger tries both")
    for _ in 0..<100 {
      #expect(resolver.resolve(address: spec) == 0)
      #expect(resolver.resolve(address: stranger) == nil)
    }
    #expect(resolver.statistics.blockEncryptions == spent)
    #expect(resolver.statistics.cacheHits == 200)
    #expect(resolver.resolve(address: address("F0:81:94:0D:FB:AA")) == nil)
    #expect(resolver.statistics.notResolvable == 1)
    #expect(resolver.statistics.blockEncryptions == spent, "a static address is never tried")
  }

  @Test func theCacheIsBounded() {
    var resolver = Self.resolver(capacity: 64)
    for i in UInt64(0)..<1_000 { _ = resolver.resolve(address: 0x40_0000_000000 | i << 24 | 0x123456) }
    #expect(resolver.cacheCount == 64)
    // A forgotten address is tried again, and still resolves.
    #expect(resolver.resolve(address: address("70:81:94:0D:FB:AA")) == 0)
    #expect(resolver.cacheCount == 64)
  }

  @Test func addingAnIRKEmptiesTheCacheSoAnAddressUnknownBeforeResolves() {
    var resolver = RPAResolver()
    resolver.add(id: 1, irk: key(Self.vectors.rpa.irks[1]))
    let spec = address("70:81:94:0D:FB:AA")
    #expect(resolver.resolve(address: spec) == nil)
    resolver.add(id: 0, irk: key(Self.vectors.rpa.irks[0]))
    #expect(resolver.resolve(address: spec) == 0)
    resolver.remove(id: 0)
    #expect(resolver.resolve(address: spec) == nil)
  }
}
