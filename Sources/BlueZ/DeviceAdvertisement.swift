import BeaconCore
import DBus

/// A Device1's address from its object path; its properties are `DevicePropertyReader`'s.
enum DeviceAdvertisement {
  /// The address in the path (`dev_C0_FF_EE_00_00_01`), for a device whose properties name none.
  static func address(path: ObjectPath) -> BluetoothAddress? {
    let last = path.lastComponent
    guard last.hasPrefix(BlueZ.devicePathPrefix) else { return nil }
    return BluetoothAddress(String(last.dropFirst(BlueZ.devicePathPrefix.count)))
  }
}
