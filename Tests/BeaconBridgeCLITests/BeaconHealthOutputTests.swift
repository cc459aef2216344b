import Foundation
import Testing

@testable import BeaconBridgeCLI
@testable import BeaconCore
@testable import BridgeDaemon

/// Issue 17: the frame's own fields and the TLM in `scan`'s table and `status`'s text.
@Suite struct BeaconHealthOutputTests {
  static let van7 = BeaconIdentity(
    uuid: UUID(uuidString: "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")!, major: 1, minor: 7)
  static let address = BluetoothAddress("C0:FF:EE:00:00:07")!

  /// A pipeline that heard an iBeacon and a TLM from one address, and an Eddystone-UID.
  static func pipeline() -> BeaconPipeline {
    var p = BeaconPipeline()
    _ = p.setPairings(
      PairingSet([Pairing(uuid: van7.uuid, major: 1, minor: 7, deviceId: "UNIT-0042", label: "van 7")]),
      at: .zero)
    let body =
      [0x02, 0x15] + withUnsafeBytes(of: van7.uuid.uuid) { Array($0) } + [0x00, 0x01, 0x00, 0x07, 0xC5]
    _ = p.ingest(
      .sighting(
        Advertisement(
          address: address, rssi: -60, manufacturerData: [ManufacturerData(companyID: 0x4C, data: body)])
      ), at: .zero)
    // TLM: 2480 mV, 21.5 °C, 256 PDUs, 10.0 s.
    let tlm: [UInt8] = [0x20, 0x00, 0x09, 0xB0, 0x15, 0x80, 0, 0, 1, 0, 0, 0, 0, 100]
    _ = p.ingest(
      .sighting(
        Advertisement(address: address, rssi: -61, serviceData: [ServiceData(uuid: .eddystone, data: tlm)])),
      at: Timestamp(seconds: 1))
    let uid: [UInt8] = [0x00, 0xE3] + [UInt8](repeating: 0x12, count: 10) + [0, 0, 0, 0, 0, 0x55]
    _ = p.ingest(
      .sighting(
        Advertisement(
          address: BluetoothAddress("C0:FF:EE:00:00:55")!, rssi: -70,
          serviceData: [ServiceData(uuid: .eddystone, data: uid)])), at: Timestamp(seconds: 1))
    return p
  }

  @Test func scanTableShowsPowerBatteryAndTemperature() {
    let p = Self.pipeline()
    let status = BridgeStatus(
      armed: true, beaconsInRange: p.tracker.inRange, active: nil, trips: [], outboundBatches: 0,
      pairings: p.pairings.pairings, now: Timestamp(seconds: 2), health: p.health.health,
      pairedBeacons: p.pairedBeacons, ignoredFrames: [:])
    let table = ScanView.table(status, now: Timestamp(seconds: 2))
    #expect(table.contains("POWER  BATTERY  TEMP"), "\(table)")
    let ibeacon = table.split(separator: "\n").first { $0.contains("1/7") } ?? ""
    #expect(ibeacon.contains("-59 ") && ibeacon.contains("2480mV") && ibeacon.contains("21.5C"), "\(ibeacon)")
    #expect(ibeacon.hasSuffix("UNIT-0042"))
    // Eddystone's Tx power at 0 m, marked @0.
    let eddystone = table.split(separator: "\n").first { $0.contains("eddystoneUID") } ?? ""
    #expect(eddystone.contains("-29@0"), "\(eddystone)")
  }

  @Test func statusTextShowsThePairedBeaconsHealth() throws {
    let health = StatusDocument.Health(
      batteryMillivolts: 2480, temperature: 21.5, advertisingCount: 256, uptimeSeconds: 10,
      telemetryAgeSeconds: 12, url: "https://example.com", reboots: 1, batteryLow: true, silent: false,
      possibleClone: false, cloneAddresses: [])
    let beacon = StatusDocument.PairedBeacon(
      deviceId: "UNIT-0042", label: nil,
      identity: .init(
        kind: "iBeacon", uuid: Self.van7.uuid.uuidString, major: 1, minor: 7, authentication: "none"),
      calibration: .init(measuredPower: -59), inRange: true, lastSeenAgoSeconds: 3.2, rssi: -61,
      smoothedRSSI: -61.5,
      packetLoss: 0.25, lastRebootAgoSeconds: nil, health: health)
    let line = StatusCommand.health(beacon)
    #expect(
      line
        == "in range, seen 3 s ago, rssi -61.5, loss 25%, battery 2480 mV LOW (12 s old), 21.5 °C, up 10 s, "
        + "256 adverts, 1 reboot(s), https://example.com")
  }
}
