import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconCore

/// `BeaconIdentity` keeps its UUID as two words and `PairingSet` matches on words:
/// these compare them with what `UUID` itself says, on random and near-equal UUIDs.
@Suite struct IdentityWordsTests {
  /// A random UUID, or one differing from `near` in a single byte (so that one word matches).
  static func uuid(_ rng: inout SplitMix64, near: UUID? = nil) -> UUID {
    var bytes = near.map { withUnsafeBytes(of: $0.uuid) { Array($0) } } ?? rng.bytes(16)
    if near != nil { bytes[Int.random(in: 0..<16, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng) }
    return bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
  }

  @Test func wordsAgreeWithUUID() {
    var rng = SplitMix64(seed: 0x19_0501)
    for index in 0..<2_000 {
      let a = Self.uuid(&rng)
      let b = Bool.random(using: &rng) ? a : Self.uuid(&rng, near: Bool.random(using: &rng) ? a : nil)
      let major = UInt16.random(in: 0...3, using: &rng)
      let minor = UInt16.random(in: 0...3, using: &rng)
      let x = BeaconIdentity(uuid: a, major: major, minor: minor)
      let y = BeaconIdentity(uuid: b, major: major, minor: minor)
      // The UUID comes back as it went in, and equality is the UUID's.
      #expect(x.uuid == a && y.uuid == b, "#\(index)")
      #expect(x.uuid.uuidString == a.uuidString, "#\(index)")
      #expect((x == y) == (a == b), "#\(index)")
      #expect((x.uuidWords == y.uuidWords) == (a == b), "#\(index)")
      if a == b { #expect(x.hashValue == y.hashValue, "#\(index)") }
      // Setting the UUID is the same as building with it.
      var z = BeaconIdentity(uuid: b, major: major, minor: minor)
      z.uuid = a
      #expect(z == x, "#\(index)")
      // The parser reads the same identity from the bytes on the air.
      let frame = BeaconFrameParser.parseManufacturerData(Fixtures.iBeaconData(x))
      #expect(frame.flatMap { try? $0.get() } == .iBeacon(IBeaconFrame(identity: x, measuredPower: -59)))
      #expect(
        BeaconFrameParser.soleIBeacon(Fixtures.iBeacon(x, address: Fixtures.vanAddress, rssi: -60))?.identity
          == x)
    }
  }

  /// The hash is the one an identity had when it stored a `UUID` (two words of its bytes, then
  /// major and minor), so the order of sets and dictionaries keyed by identities is unchanged.
  @Test func hashIsTheUUIDBytesAsWords() {
    var rng = SplitMix64(seed: 0x19_0502)
    for _ in 0..<200 {
      let uuid = Self.uuid(&rng)
      let identity = BeaconIdentity(uuid: uuid, major: 513, minor: 7)
      var hasher = Hasher()
      withUnsafeBytes(of: uuid.uuid) { raw in
        hasher.combine(raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        hasher.combine(raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
      }
      hasher.combine(UInt32(513) << 16 | 7)
      #expect(identity.hashValue == hasher.finalize())
    }
  }

  /// `<` on identities and on beacon IDs is the order of their strings, as it was when it
  /// compared `uuidString`s and `sortKey`s.
  @Test func orderIsTheStringOrder() {
    var rng = SplitMix64(seed: 0x19_0504)
    let uuids =
      (0..<4).map { _ in Self.uuid(&rng) } + [Self.uuid(&rng, near: Fixtures.fleet), Fixtures.fleet]
    let numbers: [UInt16] = [0, 1, 2, 9, 10, 11, 99, 100, 65_535]
    func identity() -> BeaconIdentity {
      BeaconIdentity(
        uuid: uuids.randomElement(using: &rng)!, major: numbers.randomElement(using: &rng)!,
        minor: numbers.randomElement(using: &rng)!)
    }
    func id() -> BeaconID {
      switch Int.random(in: 0..<5, using: &rng) {
      case 0: .eddystone(namespace: rng.bytes(10), instance: rng.bytes(6))
      case 1: .altBeacon(identity())
      default: .iBeacon(identity())
      }
    }
    for index in 0..<3_000 {
      let a = identity()
      let b = identity()
      #expect(
        (a < b) == ((a.uuid.uuidString, a.major, a.minor) < (b.uuid.uuidString, b.major, b.minor)),
        "#\(index)")
      let x = id()
      let y = Bool.random(using: &rng) ? id() : x
      #expect((x < y) == BeaconID.sortKeyOrder(x, y), "#\(index) \(x) \(y)")
    }
  }

  /// What `PairingSet.pairing(for:)` did before it matched on words: every pairing through
  /// `Pairing.matches`, the most specific, then the lowest device ID.
  static func reference(_ pairings: [Pairing], _ id: BeaconID) -> Pairing? {
    guard let identity = id.identity else { return nil }
    return pairings.filter { $0.matches(identity) }.min { a, b in
      a.specificity != b.specificity ? a.specificity > b.specificity : a.deviceId < b.deviceId
    }
  }

  /// Minors that share their low six bits (64 apart) and ones that do not: the lookup's first
  /// test is on `minor % 64` (`PairingSet.minorFilter`).
  static let minors: [UInt16] = [0, 1, 2, 63, 64, 65, 130, 65_535]

  @Test func pairingLookupAgreesWithMatches() {
    var rng = SplitMix64(seed: 0x19_0503)
    let uuids = (0..<3).map { _ in Self.uuid(&rng) }
    var checked = 0
    for index in 0..<400 {
      // Patterns over few UUIDs and numbers, so that several match one identity; every tenth
      // set is large, as a fleet's document makes it, so the exact patterns' table fills.
      let count = Int.random(in: 0..<(index % 10 == 0 ? 300 : 8), using: &rng)
      let pairings = (0..<count).map { n in
        let major: UInt16? = Bool.random(using: &rng) ? UInt16.random(in: 0...2, using: &rng) : nil
        return Pairing(
          uuid: uuids.randomElement(using: &rng)!, major: major,
          minor: major != nil && Bool.random(using: &rng) ? Self.minors.randomElement(using: &rng)! : nil,
          deviceId: DeviceID(stringLiteral: "UNIT-\(Int.random(in: 0..<4, using: &rng))-\(n)"))
      }
      var set = PairingSet(pairings)
      for _ in 0..<20 {
        let uuid =
          Bool.random(using: &rng) ? uuids.randomElement(using: &rng)! : Self.uuid(&rng, near: uuids[0])
        let identity = BeaconIdentity(
          uuid: uuid, major: UInt16.random(in: 0...2, using: &rng),
          minor: Self.minors.randomElement(using: &rng)!)
        let id: BeaconID = Bool.random(using: &rng) ? .iBeacon(identity) : .altBeacon(identity)
        #expect(set.pairing(for: id) == Self.reference(set.pairings, id), "#\(index) \(identity)")
        checked += set.pairing(for: id) == nil ? 0 : 1
      }
      #expect(set.pairing(for: .eddystone(namespace: [1], instance: [2])) == nil)
      // After changes, the lookup follows the pairings.
      if let first = pairings.first {
        set.remove(deviceId: first.deviceId)
        set.upsert(Pairing(uuid: uuids[1], major: 1, minor: nil, deviceId: "UNIT-NEW"))
        let id = BeaconID.iBeacon(BeaconIdentity(uuid: uuids[1], major: 1, minor: 2))
        #expect(set.pairing(for: id) == Self.reference(set.pairings, id), "#\(index) after changes")
      }
      #expect(set == PairingSet(set.pairings) && set.hashValue == PairingSet(set.pairings).hashValue)
    }
    #expect(checked > 300)
  }
}
