import BeaconCore
import BeaconCrypto
import BeaconTestSupport
import Foundation
import Testing

@testable import BridgeDaemon

/// The store's pairings by key: the keys read back into a working authenticator (against the
/// oracle's EID and the Core spec's RPA sample), the tracking written back, and unpairing.
@Suite struct KeyPairingStoreTests {
  static func digits(_ hex: String) -> [UInt8] { Array(hex.lowercased().utf8) }

  /// The store's door (the CLI's `pair --irk-file` and D-Bus `PairWithKey` both write through
  /// it): the 168th IRK is refused with the cap's sentence and nothing is written; the same key
  /// again replaces its own row, and an EID key is not counted.
  @Test func moreIRKsThanTheCapAreRefused() async throws {
    let dir = try scratchDirectory("irkcap")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try Store(directory: dir)
    func irk(_ n: Int) -> [UInt8] { Self.digits(String(format: "%032x", n + 1)) }
    for n in 0..<KeyedIdentity.maximumIRKPairings {
      _ = try await store.pairByKey(
        scheme: .rpa, key: irk(n), rotationExponent: nil, clockOffset: nil, deviceId: DeviceID("UNIT-\(n)"),
        label: nil)
    }
    await #expect(throws: StoreError.self) {
      try await store.pairByKey(
        scheme: .rpa, key: irk(500), rotationExponent: nil, clockOffset: nil, deviceId: DeviceID("UNIT-X"),
        label: nil)
    }
    do {
      _ = try await store.pairByKey(
        scheme: .rpa, key: irk(500), rotationExponent: nil, clockOffset: nil, deviceId: DeviceID("UNIT-X"),
        label: nil)
    } catch {
      #expect(error.code == .full)
      #expect(error.description == KeyedIdentity.irkCapSentence)
    }
    #expect(try await store.keyPairings().count == 167)
    _ = try await store.pairByKey(
      scheme: .rpa, key: irk(3), rotationExponent: nil, clockOffset: nil, deviceId: DeviceID("UNIT-3B"),
      label: nil)
    _ = try await store.pairByKey(
      scheme: .eid, key: irk(600), rotationExponent: 10, clockOffset: 0, deviceId: DeviceID("UNIT-E"),
      label: nil)
    #expect(try await store.keyPairings().count == 168)
  }

  @Test func keysComeBackAsAnAuthenticatorThatResolves() async throws {
    let dir = try scratchDirectory("keystore")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let vector = try OracleVectors.firstEID()
    let store = try Store(directory: dir)
    let eid = try await store.pairByKey(
      scheme: .eid, key: Self.digits(vector.identityKey), rotationExponent: UInt8(vector.rotationExponent),
      clockOffset: Int64(vector.beaconClock) - 1_000, deviceId: DeviceID("UNIT-E1"), label: "tag")
    let rpa = try await store.pairByKey(
      scheme: .rpa, key: Self.digits("ec0234a357c8ad05341010a60a397d9b"), rotationExponent: nil,
      clockOffset: nil,
      deviceId: DeviceID("UNIT-R1"), label: nil)
    #expect(try await store.pairings().map(\.deviceId) == ["UNIT-E1", "UNIT-R1"])

    // Box time 1000 at the pipeline's 0: the beacon's clock is the vector's then.
    var authenticator = try await store.keyAuthenticator(eidClockTolerance: 86_400, epoch: 1_000)
    let eidValue = vector.eid.reduce(0 as UInt64) { $0 << 8 | UInt64($1) }
    #expect(authenticator.authenticate(eid: eidValue, at: .zero) == .resolved(try #require(eid.pairing.key)))
    #expect(authenticator.authenticate(eid: eidValue ^ 1, at: .zero) == .unknown)
    #expect(
      authenticator.authenticate(address: BluetoothAddress("70:81:94:0D:FB:AA")!, at: .zero)
        == .resolved(try #require(rpa.pairing.key)))
    #expect(
      authenticator.authenticate(address: BluetoothAddress("70:81:94:0D:FB:AB")!, at: .zero) == .unknown)

    // The tracking goes back to the store and comes out again.
    let tracking = try #require(authenticator.tracking[eid.pairing.key!.pairing])
    try await store.saveTracking(
      pairing: eid.pairing.key!.pairing, clockOffset: tracking.clockOffset, heardWindow: tracking.heardWindow)
    let stored = try #require(try await store.keyPairings().first)
    #expect(stored.clockOffset == tracking.clockOffset && stored.heardWindow == tracking.heardWindow)
    #expect(stored.heardWindow != nil)

    // Unpaired, its key is gone from the authenticator.
    #expect(try await store.unpair(deviceId: "UNIT-E1") == 1)
    var after = try await store.keyAuthenticator(eidClockTolerance: 86_400, epoch: 1_000)
    #expect(after.authenticate(eid: eidValue, at: .zero) == .unknown)
    #expect(after.resolvesAddresses)
  }

  @Test func repairingAKeyReplacesItAndABadKeyIsRefusedWithoutIt() async throws {
    let dir = try scratchDirectory("keystore-replace")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let store = try Store(directory: dir)
    let irk = "ec0234a357c8ad05341010a60a397d9b"
    _ = try await store.pairByKey(
      scheme: .rpa, key: Self.digits(irk), rotationExponent: nil, clockOffset: nil, deviceId: DeviceID("A"),
      label: nil)
    _ = try await store.pairByKey(
      scheme: .rpa, key: Self.digits(irk), rotationExponent: nil, clockOffset: nil, deviceId: DeviceID("B"),
      label: nil)
    #expect(try await store.keyPairings().map(\.pairing.deviceId) == ["B"])
    await #expect {
      _ = try await store.pairByKey(
        scheme: .rpa, key: Self.digits(String(irk.dropLast()) + "g"), rotationExponent: nil, clockOffset: nil,
        deviceId: DeviceID("C"), label: nil)
    } throws: { error in
      !String(describing: error).contains(String(irk.dropLast()))
    }
  }

  /// A desired document's pairings by key, as `FleetDocument.parse` reads them.
  static func document(_ version: Int64, _ pairings: [String], settings: String = "{}") throws
    -> FleetDocument
  {
    try FleetDocument.parse(
      Array(
        #"{"version":\#(version),"pairings":[\#(pairings.joined(separator: ","))],"settings":\#(settings)}"#
          .utf8)
    ).get()
  }

  static let irk = "ec0234a357c8ad05341010a60a397d9b"
  static let rpa = BluetoothAddress("70:81:94:0D:FB:AA")!
  static let plain =
    #"{"uuid":"E2C56DB5-DFFB-48D2-B060-D0F5A71096E0","major":1,"minor":7,"deviceId":"VAN-7"}"#

  static func eid(_ vector: OracleVectors.EID, k: Int? = nil, label: String = "tag")
    -> String
  {
    #"{"eid":{"identityKey":"\#(vector.identityKey)","rotationExponent":\#(k ?? vector.rotationExponent),"beaconClock":\#(vector.beaconClock)},"deviceId":"UNIT-E1","label":"\#(label)"}"#
  }

  /// The desired document owns the pairings by key as it owns the others: they are written in
  /// the transaction that writes the plain pairings and the version, they replace the local
  /// ones, and `pair` by key is refused while the fleet owns the pairings.
  @Test func theFleetDocumentOwnsThePairingsByKey() async throws {
    let dir = try scratchDirectory("keystore-fleet")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let vector = try OracleVectors.firstEID()
    let eidValue = vector.eid.reduce(0 as UInt64) { $0 << 8 | UInt64($1) }
    let store = try Store(directory: dir)
    // Paired on the box before [Fleet]: the first document replaces it.
    _ = try await store.pairByKey(
      scheme: .rpa, key: Self.digits("00112233445566778899aabbccddeeff"), rotationExponent: nil,
      clockOffset: nil, deviceId: DeviceID("LOCAL-R"), label: nil)
    try await store.setFleetOwnsPairings(true)
    await #expect {
      _ = try await store.pairByKey(
        scheme: .rpa, key: Self.digits(Self.irk), rotationExponent: nil, clockOffset: nil,
        deviceId: DeviceID("UNIT-R1"), label: nil)
    } throws: { error in
      (error as? StoreError)?.code == .fleetOwnsPairings && "\(error)" == Store.fleetOwnsPairings
    }

    // Box time 1000 at apply: the beacon's clock is the vector's then.
    try await store.applyFleet(
      try Self.document(1, [Self.plain, Self.eid(vector), #"{"irk":"\#(Self.irk)","deviceId":"UNIT-R1"}"#]),
      boxSeconds: 1_000)
    let sources = try await store.pairingsWithSource().map {
      "\($0.pairing.deviceId)/\($0.source?.rawValue ?? "?")"
    }
    #expect(sources == ["VAN-7/fleet", "UNIT-E1/fleet", "UNIT-R1/fleet"])
    #expect(try await store.fleetApplied()?.version == 1)
    var authenticator = try await store.keyAuthenticator(eidClockTolerance: 86_400, epoch: 1_000)
    let eidPairing = try #require(try await store.keyPairings().first { $0.pairing.deviceId == "UNIT-E1" })
    #expect(
      authenticator.authenticate(eid: eidValue, at: .zero) == .resolved(try #require(eidPairing.pairing.key)))
    #expect(authenticator.authenticate(address: Self.rpa, at: .zero) != .unknown)
    // The box's tracking of the beacon, written back as the daemon does.
    let tracking = try #require(authenticator.tracking[eidPairing.pairing.key!.pairing])
    try await store.saveTracking(
      pairing: eidPairing.pairing.key!.pairing, clockOffset: tracking.clockOffset + 5,
      heardWindow: tracking.heardWindow)

    // Failing inside the transaction, after every pairing is written: nothing changed.
    let before = try await store.keyPairings()
    await #expect(throws: StoreError.self) {
      try await store.applyFleet(try Self.document(2, [Self.eid(vector, label: "new")]), boxSeconds: 5_000) {
        () throws(SQLiteError) in
        throw SQLiteError(code: 1, message: "test", context: "midway")
      }
    }
    #expect(try await store.pairings().map(\.deviceId) == ["VAN-7", "UNIT-E1", "UNIT-R1"])
    #expect(try await store.keyPairings() == before)
    #expect(before.first?.pairing.label == "tag")
    #expect(try await store.fleetApplied()?.version == 1)

    // The same key again, with a new label and without the IRK: its pairing and its tracking
    // stay, so neither the beacon's clock nor its newest window is forgotten.
    try await store.applyFleet(try Self.document(2, [Self.eid(vector, label: "new")]), boxSeconds: 5_000)
    let kept = try await store.keyPairings()
    #expect(kept.map(\.pairing.deviceId) == ["UNIT-E1"])
    #expect(kept.first?.pairing == eidPairing.pairing.withLabel("new"))
    #expect(kept.first?.clockOffset == tracking.clockOffset + 5)
    #expect(kept.first?.heardWindow == tracking.heardWindow)
    var after = try await store.keyAuthenticator(eidClockTolerance: 86_400, epoch: 1_000)
    #expect(after.authenticate(address: Self.rpa, at: .zero) == .unknown)
    #expect(try await store.pairingsWithSource().map { $0.source?.rawValue } == ["fleet"])

    // Another rotation exponent is another pairing: a new number, the document's clock.
    try await store.applyFleet(
      try Self.document(3, [Self.eid(vector, k: (vector.rotationExponent + 1) % 16)]), boxSeconds: 9_000)
    let fresh = try #require(try await store.keyPairings().first)
    #expect(fresh.pairing.key != eidPairing.pairing.key)
    #expect(fresh.clockOffset == Int64(vector.beaconClock) - 9_000 && fresh.heardWindow == nil)
  }
}

extension Pairing {
  fileprivate func withLabel(_ label: String) -> Pairing {
    var copy = self
    copy.label = label
    return copy
  }
}
