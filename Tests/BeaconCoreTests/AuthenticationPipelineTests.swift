import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconCore

/// A `BeaconAuthenticator` that answers from tables and counts its calls: the pipeline's side of
/// the seam, without cryptography (BeaconCrypto's resolvers are tested against the oracle in
/// BeaconCryptoTests, and end to end through `simulate` in AuthenticationScenarioTests).
struct ScriptedAuthenticator: BeaconAuthenticator {
  static let eid = KeyedIdentity(scheme: .eid, pairing: 1)
  static let rpa = KeyedIdentity(scheme: .rpa, pairing: 2)

  var eids: [UInt64: AuthenticationResult] = [:]
  var addresses: [BluetoothAddress: AuthenticationResult] = [:]
  var resolvesAddresses: Bool { !addresses.isEmpty }
  var eidCalls = 0
  var addressCalls = 0

  mutating func authenticate(eid: UInt64, at time: Timestamp) -> AuthenticationResult {
    eidCalls += 1
    return eids[eid] ?? .unknown
  }

  mutating func authenticate(address: BluetoothAddress, at time: Timestamp) -> AuthenticationResult {
    addressCalls += 1
    return addresses[address] ?? .unknown
  }

  mutating func openTLM(serviceData: [UInt8], of identity: KeyedIdentity, at time: Timestamp) -> [UInt8]? {
    nil
  }

  /// Eddystone-EID service data: type 0x30, ranging byte, the 8 EID bytes.
  static func eidFrame(_ eid: UInt64, power: Int8 = -20) -> [UInt8] {
    [0x30, UInt8(bitPattern: power)] + (0..<8).map { UInt8(truncatingIfNeeded: eid >> (56 - 8 * $0)) }
  }
}

@Suite struct AuthenticationPipelineTests {
  static let eidPairing = Pairing(key: ScriptedAuthenticator.eid, deviceId: DeviceID("UNIT-E1"))
  static let rpaPairing = Pairing(key: ScriptedAuthenticator.rpa, deviceId: DeviceID("UNIT-R1"))
  /// Top two bits 01: the form of a resolvable private address.
  static let privateAddress = BluetoothAddress("4A:12:34:56:78:9A")!
  static let publicAddress = BluetoothAddress("C0:FF:EE:00:00:07")!

  static func pipeline(_ authenticator: ScriptedAuthenticator, requireAuthenticated: Bool = false)
    -> BeaconPipeline
  {
    var configuration = BridgeConfiguration()
    configuration.requireAuthenticated = requireAuthenticated
    var p = BeaconPipeline(
      configuration: configuration, pairings: PairingSet([eidPairing, rpaPairing, Fixtures.vanPairing]))
    p.setAuthenticator(authenticator)
    return p
  }

  static func events(_ steps: [BeaconPipeline.Step]) -> [BridgeEvent] {
    steps.compactMap { if case .event(let e) = $0 { e } else { nil } }
  }

  @Test func aResolvedEIDIsASightingOfItsPairing() {
    var p = Self.pipeline(ScriptedAuthenticator(eids: [42: .resolved(ScriptedAuthenticator.eid)]))
    let ad = Advertisement(
      address: Self.publicAddress, rssi: -60,
      serviceData: [ServiceData(uuid: .eddystone, data: ScriptedAuthenticator.eidFrame(42))])
    var active: ActiveBeacon?
    for t in 0..<4 {
      for case .activeBeaconChanged(let a) in Self.events(
        p.ingest(.sighting(ad), at: Timestamp(seconds: Double(t))))
      {
        active = a
      }
    }
    #expect(active?.id == .keyed(ScriptedAuthenticator.eid))
    #expect(active?.deviceId == "UNIT-E1")
    #expect(active?.id.authentication == .eid)
    #expect(p.tracker.beacon(.keyed(ScriptedAuthenticator.eid))?.powerAt1m == -20 - 41)
  }

  @Test func anUnknownEIDIsCountedAndTrackedAsNothing() {
    var p = Self.pipeline(ScriptedAuthenticator())
    let ad = Advertisement(
      address: Self.publicAddress,
      serviceData: [ServiceData(uuid: .eddystone, data: ScriptedAuthenticator.eidFrame(7))])
    #expect(Self.events(p.ingest(.sighting(ad), at: .zero)).isEmpty)
    #expect(p.health.ignoredFrames == ["eddystoneEID": 1])
    #expect(p.tracker.inRange.isEmpty)
  }

  /// Addresses are tried only when a pairing has an IRK, only in the private form, and the fast
  /// path for a sole iBeacon does not skip the try.
  @Test func onlyPrivateAddressesAreTriedAndTheFastPathTriesThem() {
    let iBeacon = Fixtures.iBeaconData(Fixtures.strangerBeacon)
    var none = Self.pipeline(ScriptedAuthenticator())
    _ = none.ingest(
      .sighting(Advertisement(address: Self.privateAddress, manufacturerData: [iBeacon])), at: .zero)
    #expect((none.authenticator as? ScriptedAuthenticator)?.addressCalls == 0)

    var p = Self.pipeline(
      ScriptedAuthenticator(addresses: [Self.privateAddress: .resolved(ScriptedAuthenticator.rpa)]))
    _ = p.ingest(
      .sighting(Advertisement(address: Self.publicAddress, manufacturerData: [iBeacon])), at: .zero)
    #expect((p.authenticator as? ScriptedAuthenticator)?.addressCalls == 0)
    _ = p.ingest(
      .sighting(Advertisement(address: Self.privateAddress, manufacturerData: [iBeacon])), at: .zero)
    #expect((p.authenticator as? ScriptedAuthenticator)?.addressCalls == 1)
    // The address stands for the device: its clear identity is not a second beacon.
    // (The iBeacon heard from the public address is a plain beacon, still from that address.)
    #expect(
      Set(p.tracker.inRange.map(\.id)) == [
        .keyed(ScriptedAuthenticator.rpa), .iBeacon(Fixtures.strangerBeacon),
      ])
    #expect(p.tracker.beacon(.iBeacon(Fixtures.strangerBeacon))?.address == Self.publicAddress)
    #expect(p.tracker.beacon(.keyed(ScriptedAuthenticator.rpa))?.powerAt1m == -59)

    // The same through a source's batch (`ingest(_:from:at:)`, the daemon's path).
    var batch = Self.pipeline(
      ScriptedAuthenticator(addresses: [Self.privateAddress: .resolved(ScriptedAuthenticator.rpa)]))
    let events: [SourceEvent] = [
      .sighting(Advertisement(address: Self.privateAddress, manufacturerData: [iBeacon]))
    ]
    events.withUnsafeBufferPointer { buffer in
      var index = 0
      while index < buffer.count { _ = batch.ingest(buffer, from: &index, at: .zero) }
    }
    #expect(batch.tracker.inRange.map(\.id) == [.keyed(ScriptedAuthenticator.rpa)])
  }

  @Test func underThePolicyAPlainPairingNeverBecomesActive() {
    let van = Fixtures.iBeaconData(Fixtures.vanBeacon)
    for required in [false, true] {
      var p = Self.pipeline(ScriptedAuthenticator(), requireAuthenticated: required)
      var activated = false
      for t in 0..<10 {
        let steps = p.ingest(
          .sighting(Advertisement(address: Self.publicAddress, rssi: -50, manufacturerData: [van])),
          at: Timestamp(seconds: Double(t)))
        if Self.events(steps).contains(where: { $0.type == "activeBeaconChanged" }) { activated = true }
      }
      #expect(activated == !required, "requireAuthenticated \(required)")
      #expect(p.tracker.inRange.count == 1)
    }
  }

  /// The policy turned on by a reload: a plain active beacon stops being active at once, and a
  /// trip started then is not tagged with it; an active beacon proven by key stays.
  @Test func turningThePolicyOnEndsAPlainActiveBeacon() throws {
    let van = Fixtures.iBeaconData(Fixtures.vanBeacon)
    var p = Self.pipeline(ScriptedAuthenticator())
    for t in 0..<10 {
      _ = p.ingest(
        .sighting(Advertisement(address: Self.publicAddress, rssi: -50, manufacturerData: [van])),
        at: Timestamp(seconds: Double(t)))
    }
    #expect(p.selector.active?.deviceId == Fixtures.vanPairing.deviceId)
    var strict = p.configuration
    strict.requireAuthenticated = true
    let steps = p.reconfigure(strict, at: Timestamp(seconds: 10))
    #expect(Self.events(steps).map(\.type) == ["activeBeaconChanged"])
    #expect(p.selector.active == nil)
    _ = try p.startTrip("t-1", at: Timestamp(seconds: 11))
    #expect(p.snapshotActiveBeacon(for: "t-1", at: Timestamp(seconds: 11)).0 == nil)

    var keyed = Self.pipeline(ScriptedAuthenticator(eids: [42: .resolved(ScriptedAuthenticator.eid)]))
    let eid = Advertisement(
      address: Self.publicAddress, rssi: -60,
      serviceData: [ServiceData(uuid: .eddystone, data: ScriptedAuthenticator.eidFrame(42))])
    for t in 0..<4 { _ = keyed.ingest(.sighting(eid), at: Timestamp(seconds: Double(t))) }
    #expect(keyed.reconfigure(strict, at: Timestamp(seconds: 4)).isEmpty)
    #expect(keyed.selector.active?.deviceId == "UNIT-E1")
  }

  @Test func keyedPairingsMatchOnlyTheirKey() {
    let set = PairingSet([Self.eidPairing, Self.rpaPairing, Fixtures.vanPairing])
    #expect(set.pairing(for: .keyed(ScriptedAuthenticator.eid))?.deviceId == "UNIT-E1")
    #expect(set.pairing(for: .keyed(KeyedIdentity(scheme: .rpa, pairing: 1))) == nil)
    // The nil UUID a pairing by key carries matches no iBeacon that sends it.
    let nilUUID = BeaconIdentity(
      uuid: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), major: 0, minor: 1)
    #expect(set.pairing(for: .iBeacon(nilUUID)) == nil)
    #expect(set.pairing(for: .iBeacon(Fixtures.vanBeacon))?.deviceId == Fixtures.vanPairing.deviceId)
  }
}
