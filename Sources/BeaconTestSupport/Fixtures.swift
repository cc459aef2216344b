import BeaconCore
import Foundation

/// Beacons and advertisements the tests share.
public enum Fixtures {
  public static let fleet = UUID(uuidString: "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")!
  public static let other = UUID(uuidString: "FDA50693-A4E2-4FB1-AFCF-C6EB07647825")!

  public static let vanBeacon = BeaconIdentity(uuid: fleet, major: 1, minor: 7)
  public static let otherVanBeacon = BeaconIdentity(uuid: fleet, major: 1, minor: 9)
  public static let strangerBeacon = BeaconIdentity(uuid: other, major: 100, minor: 1)

  public static let vanAddress = BluetoothAddress("C0:FF:EE:00:00:07")!
  public static let otherVanAddress = BluetoothAddress("C0:FF:EE:00:00:09")!
  public static let strangerAddress = BluetoothAddress("DE:AD:BE:EF:00:01")!

  public static let vanPairing = Pairing(
    uuid: fleet, major: 1, minor: 7, deviceId: "UNIT-0042", label: "van 7")
  public static let otherVanPairing = Pairing(
    uuid: fleet, major: 1, minor: 9, deviceId: "UNIT-0099", label: "van 9")

  /// The iBeacon manufacturer data for an identity.
  public static func iBeaconData(_ identity: BeaconIdentity, power: Int8 = -59) -> ManufacturerData {
    ScriptedBeacon(
      address: vanAddress, identity: identity, measuredPower: power, rssi: { _ in 0 }, from: 0, until: 0
    )
    .manufacturerData
  }

  /// A BlueZ-style advertisement of an iBeacon.
  public static func iBeacon(_ identity: BeaconIdentity, address: BluetoothAddress, rssi: Int?)
    -> Advertisement
  {
    Advertisement(address: address, rssi: rssi, manufacturerData: [iBeaconData(identity)])
  }

  /// The raw AD structures of an iBeacon PDU: flags, then manufacturer data.
  public static func iBeaconPDU(_ identity: BeaconIdentity, power: Int8 = -59) -> [UInt8] {
    let data = iBeaconData(identity, power: power)
    return [0x02, 0x01, 0x06, UInt8(data.data.count + 3), 0xFF, 0x4C, 0x00] + data.data
  }

  /// A trip event of a seed-app type.
  public static func event(_ type: String, at time: Double, extra: [String: JSONValue] = [:]) -> TripEvent {
    var fields: [String: JSONValue] = ["type": .string(type), "at": .double(time)]
    for (k, v) in extra { fields[k] = v }
    return TripEvent(fields: fields)
  }
}
