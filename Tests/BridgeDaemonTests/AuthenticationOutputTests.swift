import BeaconCore
import BeaconCrypto
import BeaconTestSupport
import Foundation
import Testing

@testable import BridgeDaemon

/// How an identity was proven, in what the daemon shows and sends: `status` (the active beacon,
/// beacons in range, trips), the upload body's `beacon` object (HTTP and MQTT), `pairs`. The EID
/// is the crypto oracle's (Tests/Crypto/vectors.json), not one BeaconCrypto computed.
@Suite struct AuthenticationOutputTests {
  static let key = KeyedIdentity(scheme: .eid, pairing: 7)

  /// A bridge with one EID pairing (and the plain van pairing), the EID beacon heard for 4 s
  /// and a trip started and given a batch.
  static func bridge() async throws -> (BeaconBridge, SimulationHost) {
    let vector = try OracleVectors.firstEID()
    let host = SimulationHost(configuration: BridgeConfiguration())
    let clock = VirtualClock()
    let bridge = BeaconBridge(host: host, clock: clock)
    await bridge.setPairings([
      Pairing(key: key, deviceId: DeviceID("UNIT-E1"), label: "tag"), Fixtures.vanPairing,
    ])
    var authenticator = KeyAuthenticator(eidClockTolerance: 86_400, epoch: 0)
    authenticator.add(
      eid: EIDPairing(
        id: KeyPairingID(rawValue: key.pairing), identityKey: try AES128Key(hex: vector.identityKey),
        rotationExponent: try #require(RotationExponent(rawValue: UInt8(vector.rotationExponent))),
        beaconClock: UInt32(vector.beaconClock), atBoxSeconds: 0))
    await bridge.setAuthenticator(authenticator)
    try await bridge.start()
    let ad = Advertisement(
      address: BluetoothAddress("C0:FF:EE:00:0E:01")!, rssi: -60,
      serviceData: [ServiceData(uuid: .eddystone, data: [0x30, 0xEB] + vector.eid)])
    for t in 0..<4 {
      clock.set(seconds: Double(t))
      await bridge.ingest(.sighting(ad))
    }
    try await bridge.tripStart(TripID("t1"))
    try await bridge.tripEvents(TripID("t1"), events: [Fixtures.event("braking", at: 4)])
    return (bridge, host)
  }

  @Test func statusSaysEID() async throws {
    let (bridge, _) = try await Self.bridge()
    let json = StatusDocument(await bridge.status, scan: .starting, outbox: nil).json
    #expect(json["activeBeacon"]?["deviceId"]?.stringValue == "UNIT-E1")
    #expect(json["activeBeacon"]?["authentication"]?.stringValue == "eid")
    #expect(json["beaconsInRange"]?.arrayValue?.first?["authentication"]?.stringValue == "eid")
    #expect(json["trips"]?.arrayValue?.first?["authentication"]?.stringValue == "eid")
    #expect(json["pairedBeacons"]?.arrayValue?.first?["authentication"]?.stringValue == "eid")
  }

  /// The fleet's beacon report names each pairing as `pairs` does: a pairing by key by its
  /// scheme and number (no nil UUID posing as an identity), a plain one by its identity, with
  /// the clone verdict.
  @Test func theFleetBeaconReportSaysHowEachPairingIsProven() async throws {
    let (bridge, _) = try await Self.bridge()
    let status = await bridge.status
    let keyed = try #require(status.pairedBeacons.first { $0.pairing.key != nil })
    let entry = FleetBeaconReport.entry(keyed, now: status.now, at: { _ in nil }).json
    #expect(entry["authentication"] == .string("eid"))
    #expect(entry["pairing"] == .int(7))
    #expect(entry["uuid"] == .null && entry["major"] == .null && entry["minor"] == .null)
    #expect(entry["deviceId"] == .string("UNIT-E1") && entry["label"] == .string("tag"))
    #expect(entry["possibleClone"] == .bool(false))
    #expect(FleetBeaconReport.name(keyed.pairing) == "UNIT-E1|eid|7")

    // A plain pairing heard from two addresses at once for 30 s.
    var pipeline = BeaconPipeline(pairings: PairingSet([Fixtures.vanPairing]))
    for t in 0..<30 {
      for (address, offset) in [(Fixtures.vanAddress, 0.0), (Fixtures.strangerAddress, 0.5)] {
        _ = pipeline.ingest(
          .sighting(Fixtures.iBeacon(Fixtures.vanBeacon, address: address, rssi: -60)),
          at: Timestamp(seconds: Double(t) + offset))
      }
    }
    let plain = try #require(pipeline.pairedBeacons.first)
    let cloned = FleetBeaconReport.entry(plain, now: Timestamp(seconds: 30), at: { _ in nil }).json
    #expect(cloned["authentication"] == .string("none"))
    #expect(cloned["uuid"] == .string(Fixtures.fleet.uuidString))
    #expect(cloned["major"] == .int(1) && cloned["minor"] == .int(7))
    #expect(cloned["pairing"] == nil)
    #expect(cloned["possibleClone"] == .bool(true))
  }

  @Test func theUploadBodySaysEIDOverHTTPAndMQTT() async throws {
    let (_, host) = try await Self.bridge()
    let batch = try #require(host.posted.first)
    let payload = try UploadPayload(batch)
    for body in [payload.httpBody, payload.mqttBody] {
      let object = try JSONValue.parse(Data(body))
      #expect(object["deviceId"]?.stringValue == "UNIT-E1")
      #expect(object["beacon"]?["authentication"]?.stringValue == "eid")
      #expect(object["beacon"]?["kind"]?.stringValue == "eddystoneEID")
      #expect(object["beacon"]?["uuid"] == .null)
    }
    // A plain identity says none.
    var plain = batch
    plain.resolution = .beacon(
      BeaconSnapshot(
        id: .iBeacon(Fixtures.vanBeacon), deviceId: "UNIT-0042", label: nil, smoothedRSSI: nil, lastRSSI: nil,
        distance: nil, proximity: .near, takenAt: .zero), late: false)
    let object = try JSONValue.parse(Data(try UploadPayload(plain).httpBody))
    #expect(object["beacon"]?["authentication"]?.stringValue == "none")
  }

  @Test func aPairingByKeyListsNoKeyAndNoUUID() throws {
    let vector = try OracleVectors.firstEID()
    let json = Pairing(key: Self.key, deviceId: DeviceID("UNIT-E1")).json
    #expect(json["authentication"]?.stringValue == "eid")
    #expect(json["uuid"] == .null)
    #expect(!json.compactText.lowercased().contains(vector.identityKey.lowercased()))
    #expect(Fixtures.vanPairing.json["authentication"]?.stringValue == "none")
  }
}
