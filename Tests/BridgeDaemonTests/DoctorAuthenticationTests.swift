import BeaconCore
import BlueZ
import BridgeDaemon
import Testing

/// `doctor` on how the pairings prove their beacons.
@Suite struct DoctorAuthenticationTests {
  func report(_ authentication: [String: JSONValue], requireAuthenticated: Bool) -> HealthReport {
    var configuration = DaemonConfiguration()
    configuration.bridge.requireAuthenticated = requireAuthenticated
    let daemon: JSONValue = .object([
      "scanning": .string("bluez (active discovery)"), "authentication": .object(authentication),
    ])
    return Doctor.evaluate(
      DoctorTests().facts(config: .success(configuration), daemon: .success(daemon)))
  }

  func check(_ report: HealthReport, _ name: String) -> HealthCheck? {
    report.checks.first { $0.name == name }
  }

  @Test func aPlainPairingWithoutThePolicyCanBeCloned() {
    let open = report(
      [
        "plainPairings": .int(2), "keyPairings": .int(0), "eidReplaysRefused": .int(0),
        "irkPairings": .int(0), "rpaReplaysRefused": .int(0),
      ],
      requireAuthenticated: false)
    let clone = check(open, "cloneable pairing")
    #expect(clone?.status == .warning)
    #expect(clone?.detail.contains("2 pairing(s)") == true)
    #expect(clone?.recommendation?.contains("--eid-key-file") == true)
    #expect(clone?.recommendation?.contains("requireAuthenticated = true") == true)
    let closed = report(
      [
        "plainPairings": .int(2), "keyPairings": .int(1), "eidReplaysRefused": .int(0),
        "irkPairings": .int(0), "rpaReplaysRefused": .int(0),
      ],
      requireAuthenticated: true)
    #expect(check(closed, "cloneable pairing") == nil)
    #expect(check(closed, "authentication")?.status == .ok)
  }

  /// A replayed private address is warned of; the chance of a false match is stated for the
  /// IRK pairings there are (N / 2^24; at the cap, about 1 in 100,000).
  @Test func anRPAReplayAndTheFalseMatchChanceAreSaid() {
    let seen = report(
      [
        "plainPairings": .int(0), "keyPairings": .int(167), "eidReplaysRefused": .int(0),
        "irkPairings": .int(167), "rpaReplaysRefused": .int(4),
      ],
      requireAuthenticated: true)
    let replay = check(seen, "RPA replay")
    #expect(replay?.status == .warning)
    #expect(
      replay?.detail.hasPrefix("4 advertisement(s) from a paired device's private address refused") == true)
    #expect(replay?.recommendation?.contains("rpaMaxAge") == true)
    let chance = check(seen, "RPA false match")
    #expect(chance?.status == .ok)
    #expect(chance?.detail.contains("167 pairing(s) by IRK") == true)
    #expect(chance?.detail.contains("about 1 in 100462") == true, "\(chance?.detail ?? "")")
    #expect(check(seen, "authentication") == nil, "a warning stands instead")
    let one = report(
      [
        "plainPairings": .int(0), "keyPairings": .int(1), "eidReplaysRefused": .int(0),
        "irkPairings": .int(1), "rpaReplaysRefused": .int(0),
      ],
      requireAuthenticated: true)
    #expect(check(one, "RPA replay") == nil)
    #expect(check(one, "RPA false match")?.detail.contains("about 1 in 16777216") == true)
    #expect(check(one, "authentication")?.status == .ok)
  }

  @Test func aReplaySeenIsSaid() {
    let seen = report(
      [
        "plainPairings": .int(0), "keyPairings": .int(1), "eidReplaysRefused": .int(3),
        "irkPairings": .int(0), "rpaReplaysRefused": .int(0),
      ],
      requireAuthenticated: true)
    let replay = check(seen, "EID replay")
    #expect(replay?.status == .warning)
    #expect(replay?.detail.contains("3 replayed") == true)
    let none = report(
      [
        "plainPairings": .int(0), "keyPairings": .int(1), "eidReplaysRefused": .int(0),
        "irkPairings": .int(0), "rpaReplaysRefused": .int(0),
      ],
      requireAuthenticated: false)
    #expect(check(none, "EID replay") == nil)
  }
}

/// `doctor` on the worst cold EID search (docs/authentication.md): within the limit, said with its
/// time; past it (pairings written behind the daemon's back, a store from another box), critical
/// with the refusal the daemon starts with; the fleet's applied tolerance counts over the file's.
@Suite struct DoctorColdSearchTests {
  func check(
    tolerance: Double, exponents: [UInt8], fleet: [FleetSetting] = []
  ) -> HealthCheck? {
    var configuration = DaemonConfiguration()
    configuration.bridge.eidClockTolerance = tolerance
    var facts = DoctorTests().facts(config: .success(configuration))
    facts.eidSearch = (exponents, fleet)
    return Doctor.evaluate(facts).checks.first { $0.name == "cold EID search" }
  }

  @Test func withinTheLimitItsTimeIsSaid() {
    // 694 pairings at K = 0 and a day: 119,930,140 operations, 599.7 s (worked in
    // ColdSearchLimitTests), shown rounded up.
    let fits = check(tolerance: 86_400, exponents: Array(repeating: 0, count: 694))
    #expect(fits?.status == .ok)
    #expect(
      fits?.detail
        == "694 Eddystone-EID pairing(s) with eidClockTolerance = 86400 s: one cold search takes up to 10 min at the search budget, within the limit of 10 min"
    )
    #expect(check(tolerance: 86_400, exponents: []) == nil)
  }

  @Test func pastTheLimitItIsCriticalWithTheRefusal() {
    let past = check(tolerance: 604_800, exponents: Array(repeating: 0, count: 100))
    #expect(past?.status == .critical)
    #expect(
      past?.detail.hasPrefix(
        "[ActiveBeacon] eidClockTolerance = 604800 s with 100 Eddystone-EID pairing(s), 100 of them fast-rotating (K below 10), makes one cold search take up to 10 min 5 s"
      ) == true, "\(past?.detail ?? "")")
    #expect(past?.detail.hasSuffix("; the daemon refuses to start with it") == true)
    #expect(past?.recommendation?.contains("eidClockTolerance") == true)
  }

  @Test func theFleetsAppliedToleranceCountsOverTheFile() {
    let fleet = [FleetSetting(section: "ActiveBeacon", key: "eidClockTolerance", value: "604800")]
    #expect(check(tolerance: 86_400, exponents: Array(repeating: 0, count: 100))?.status == .ok)
    #expect(
      check(tolerance: 86_400, exponents: Array(repeating: 0, count: 100), fleet: fleet)?.status == .critical)
  }
}
