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

  @Test func keysComeBackAsAnAuthenticatorThatResolves() async throws {
    let dir = try scratchDirectory("keystore")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let vector = try AuthenticationOutputTests.oracleEID()
    let store = try Store(directory: dir)
    let eid = try await store.pairByKey(
      scheme: .eid, key: Self.digits(vector.identityKey), rotationExponent: vector.rotationExponent,
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
      authenticator.authenticate(address: BluetoothAddress("70:81:94:0D:FB:AA")!)
        == .resolved(try #require(rpa.pairing.key)))
    #expect(authenticator.authenticate(address: BluetoothAddress("70:81:94:0D:FB:AB")!) == .unknown)

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
}
