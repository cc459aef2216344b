import BeaconCore
import BeaconCrypto
import BeaconTestSupport
import Foundation
import Testing

@testable import BridgeDaemon

/// The limit on a cold search (docs/authentication.md, "The time a cold search may take"). Every
/// expected figure is worked out by hand from the doc's formula, per pairing
/// ⌊2T / 2^K⌋ + 2 + 2 × (⌊2T / 65,536⌋ + 2) AES operations, summed over the pairings and divided
/// by the search budget of 200,000 operations a second, against a limit of 600 s
/// (120,000,000 operations).
@Suite struct ColdSearchLimitTests {
  static func exponents(_ counts: [UInt8: Int]) -> [UInt8] {
    counts.sorted { $0.key < $1.key }.flatMap { Array(repeating: $0.key, count: $0.value) }
  }

  /// One pairing: T = 86,400: 2T = 172,800, ⌊172,800 / 65,536⌋ = 2, so 2 × (2 + 2) = 8 for the
  /// keys; K = 0: 172,800 + 2 + 8; K = 10: ⌊172,800 / 1,024⌋ = 168, + 2 + 8; K = 15: ⌊172,800 /
  /// 32,768⌋ = 5, + 2 + 8. T = 604,800: 2T = 1,209,600, ⌊1,209,600 / 65,536⌋ = 18, 2 × 20 = 40;
  /// K = 0: 1,209,600 + 2 + 40; K = 10: 1,181 + 2 + 40. T = 0: 0 + 2 + 2 × 2.
  @Test(
    arguments: [
      (86_400, 0, 172_810), (86_400, 10, 178), (86_400, 15, 15), (604_800, 0, 1_209_642),
      (604_800, 10, 1_223), (0, 0, 6),
    ] as [(Int64, UInt8, Int64)])
  func onePairingCostsTheDocsFormula(tolerance: Int64, k: UInt8, operations: Int64) throws {
    let exponent = try #require(RotationExponent(rawValue: k))
    #expect(EIDResolver.searchOperations(tolerance: tolerance, rotationExponent: exponent) == operations)
    #expect(EIDResolver.searchOperations(tolerance: tolerance, rotationExponents: [exponent]) == operations)
    #expect(
      ColdSearchLimit.worstOperations(eidClockTolerance: Double(tolerance), rotationExponents: [k])
        == operations)
  }

  /// The sum over pairings, and the seconds at the budget.
  @Test func theWorstSearchIsTheSumOverThePairings() {
    // 172,810 + 178 + 15 = 173,003 operations: 0.865015 s.
    #expect(
      ColdSearchLimit.worstOperations(eidClockTolerance: 86_400, rotationExponents: [0, 10, 15]) == 173_003)
    #expect(
      ColdSearchLimit.worstSeconds(eidClockTolerance: 86_400, rotationExponents: [0, 10, 15]) == 0.865015)
    // No EID pairing: nothing to search.
    #expect(ColdSearchLimit.worstOperations(eidClockTolerance: 604_800, rotationExponents: []) == 0)
    // The caps: 10,000 × 1,209,642 = 12,096,420,000 operations, 60,482.1 s (16.8 hours).
    let caps = Self.exponents([0: 10_000])
    #expect(
      ColdSearchLimit.worstOperations(eidClockTolerance: 604_800, rotationExponents: caps) == 12_096_420_000)
    #expect(ColdSearchLimit.worstSeconds(eidClockTolerance: 604_800, rotationExponents: caps) == 60_482.1)
    // The tolerance as the resolver takes it: whole seconds, 0 to a week.
    #expect(ColdSearchLimit.worstOperations(eidClockTolerance: 86_400.9, rotationExponents: [0]) == 172_810)
    #expect(ColdSearchLimit.worstOperations(eidClockTolerance: -5, rotationExponents: [0]) == 6)
    #expect(ColdSearchLimit.worstOperations(eidClockTolerance: 1e12, rotationExponents: [0]) == 1_209_642)
  }

  /// What the limit lets through and what it refuses.
  @Test(
    arguments: [
      // The default day: 694 × 172,810 = 119,930,140 fits, 695 × 172,810 = 120,102,950 does not.
      (86_400, [0: 694], true), (86_400, [0: 695], false),
      // The flood test's 200 at K = 0: 34,562,000 (172.8 s).
      (86_400, [0: 200], true),
      // 10,000 at K = 10: 1,780,000 (8.9 s); at K = 4: ⌊172,800 / 16⌋ = 10,800, + 10 = 10,810
      // each, 108,100,000 (540.5 s); at K = 3: 21,610 each, 216,100,000 (1,080.5 s).
      (86_400, [10: 10_000], true), (86_400, [4: 10_000], true), (86_400, [3: 10_000], false),
      // A week: 99 × 1,209,642 = 119,754,558 fits, 100 × 1,209,642 = 120,964,200 does not;
      // 10,000 at K = 10: 12,230,000 (61.15 s).
      (604_800, [0: 99], true), (604_800, [0: 100], false), (604_800, [10: 10_000], true),
      // 99 at K = 0 and one at K = 15 (⌊1,209,600 / 32,768⌋ = 36, + 2 + 40 = 78): 119,754,636.
      (604_800, [0: 99, 15: 1], true),
    ] as [(Double, [UInt8: Int], Bool)])
  func theLimitLetsThroughOrRefuses(tolerance: Double, counts: [UInt8: Int], fits: Bool) {
    let refusal = ColdSearchLimit.refusal(
      eidClockTolerance: tolerance, rotationExponents: Self.exponents(counts))
    #expect((refusal == nil) == fits, "\(refusal ?? "fits")")
  }

  /// The sentence names the tolerance, the pairings and how many rotate fast, the time and the
  /// budget, the limit, and the fix. 695 at K = 0 and 5 at K = 12 (⌊172,800 / 4,096⌋ = 42, + 10 =
  /// 52 each): 120,102,950 + 260 = 120,103,210 operations, 600.5 s, shown rounded up as 601 s.
  @Test func theRefusalNamesTheFieldsAndTheFix() {
    let refusal = ColdSearchLimit.refusal(
      eidClockTolerance: 86_400, rotationExponents: Self.exponents([0: 695, 12: 5]))
    #expect(
      refusal
        == "[ActiveBeacon] eidClockTolerance = 86400 s with 700 Eddystone-EID pairing(s), 695 of them fast-rotating (K below 10), makes one cold search take up to 10 min 1 s at the search budget of 200000 AES operations a second, over the limit of 10 min (docs/authentication.md); lower eidClockTolerance, or pair fewer fast-rotating beacons or give them a larger rotation exponent K"
    )
    // The caps: 60,482.1 s, shown as 16 h 48 min.
    let caps = ColdSearchLimit.refusal(
      eidClockTolerance: 604_800, rotationExponents: Self.exponents([0: 10_000]))
    #expect(
      caps?.contains("604800 s with 10000 Eddystone-EID pairing(s), 10000 of them fast-rotating") == true)
    #expect(caps?.contains("take up to 16 h 48 min at the search budget") == true, "\(caps ?? "")")
  }

  static func digits(_ n: Int) -> [UInt8] { Array(String(format: "%032x", n + 1).utf8) }

  /// The store's door (D-Bus `PairWithKey`, `pair` and `provision` write through it): the EID
  /// pairing that takes the search past the limit is refused with the sentence and nothing is
  /// written; the same key again replaces its own row and is not counted twice; an IRK is not
  /// counted.
  @Test func theStoreRefusesTheEIDPairingPastTheLimit() async throws {
    let dir = try scratchDirectory("coldsearch")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try Store(directory: dir)
    let week: Double = 604_800
    for n in 0..<99 {
      _ = try await store.pairByKey(
        scheme: .eid, key: Self.digits(n), rotationExponent: 0, clockOffset: 0,
        deviceId: DeviceID("UNIT-\(n)"),
        label: nil, eidClockTolerance: week)
    }
    let before = try await store.keyPairings()
    do {
      _ = try await store.pairByKey(
        scheme: .eid, key: Self.digits(500), rotationExponent: 0, clockOffset: 0,
        deviceId: DeviceID("UNIT-X"),
        label: nil, eidClockTolerance: week)
      Issue.record("the 100th pairing at K = 0 and a week was stored")
    } catch {
      #expect(error.code == .coldSearch)
      #expect(
        error.description
          == ColdSearchLimit.refusal(
            eidClockTolerance: week, rotationExponents: Array(repeating: 0, count: 100)))
    }
    #expect(try await store.keyPairings() == before)
    // The same key again replaces its row: still 99.
    _ = try await store.pairByKey(
      scheme: .eid, key: Self.digits(3), rotationExponent: 0, clockOffset: 5, deviceId: DeviceID("UNIT-3B"),
      label: nil, eidClockTolerance: week)
    // A slow-rotating one fits (78 operations more), and an IRK costs no search.
    _ = try await store.pairByKey(
      scheme: .eid, key: Self.digits(600), rotationExponent: 15, clockOffset: 0, deviceId: DeviceID("UNIT-S"),
      label: nil, eidClockTolerance: week)
    _ = try await store.pairByKey(
      scheme: .rpa, key: Self.digits(700), rotationExponent: nil, clockOffset: nil,
      deviceId: DeviceID("UNIT-R"),
      label: nil, eidClockTolerance: week)
    #expect(try await store.keyPairings().count == 101)
    // The store's refusal for the daemon's start and reload: the day fits, the week plus one
    // more at K = 0 does not.
    #expect(try await store.coldSearchRefusal(eidClockTolerance: 86_400) == nil)
    #expect(try await store.coldSearchRefusal(eidClockTolerance: week) == nil)
    _ = try await store.pairByKey(
      scheme: .eid, key: Self.digits(800), rotationExponent: 0, clockOffset: 0, deviceId: DeviceID("UNIT-Y"),
      label: nil, eidClockTolerance: 86_400)
    #expect(try await store.coldSearchRefusal(eidClockTolerance: week) != nil)
  }

  static func eid(_ n: Int, k: Int) -> String {
    #"{"eid":{"identityKey":"\#(String(format: "%032x", n + 1))","rotationExponent":\#(k),"beaconClock":65280},"deviceId":"UNIT-\#(n)"}"#
  }

  static func document(pairings: Int, k: Int = 0, settings: String? = nil) -> [UInt8] {
    let list = (0..<pairings).map { eid($0, k: k) }.joined(separator: ",")
    return Array(
      #"{"version":3,"pairings":[\#(list)]\#(settings.map { #","settings":\#($0)"# } ?? "")}"#.utf8)
  }

  /// The fleet's desired document: its EID pairings replace the store's, and its tolerance lies
  /// over the file's, so the document is refused whole, with the sentence, when the two make
  /// the search too long; refused, it is never applied (FleetDesired).
  @Test func theFleetDocumentPastTheLimitIsRefused() throws {
    let week = #"{"ActiveBeacon":{"eidClockTolerance":604800}}"#
    guard case .success = FleetDocument.parse(Self.document(pairings: 99, settings: week)) else {
      Issue.record("99 pairings at K = 0 and a week refused")
      return
    }
    guard case .failure(let refusal) = FleetDocument.parse(Self.document(pairings: 100, settings: week))
    else {
      Issue.record("100 pairings at K = 0 and a week accepted")
      return
    }
    #expect(refusal.version == 3)
    #expect(
      refusal.reason
        == ColdSearchLimit.refusal(
          eidClockTolerance: 604_800, rotationExponents: Array(repeating: 0, count: 100)))
    // The same pairings with the file's week and no setting in the document.
    var file = DaemonConfiguration()
    file.bridge.eidClockTolerance = 604_800
    guard case .failure = FleetDocument.parse(Self.document(pairings: 100), file: file) else {
      Issue.record("100 pairings at K = 0 and the file's week accepted")
      return
    }
    guard case .success = FleetDocument.parse(Self.document(pairings: 100)) else {
      Issue.record("100 pairings at K = 0 and a day refused")
      return
    }
  }
}
