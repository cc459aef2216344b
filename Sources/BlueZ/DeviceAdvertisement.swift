import BeaconCore
import DBus

/// Turns Device1 properties into an `Advertisement`.
enum DeviceAdvertisement {
  /// The advertisement a Device1 currently describes. Missing fields stay empty; RSSI may be
  /// absent (BlueZ in a VM reports none).
  static func make(path: ObjectPath, properties: ObjectTree.Properties) -> Advertisement? {
    guard let address = address(path: path, properties: properties) else { return nil }
    return Advertisement(
      address: address,
      rssi: properties[BlueZ.Property.rssi]?.int,
      txPower: properties[BlueZ.Property.txPower]?.int,
      manufacturerData: manufacturerData(properties[BlueZ.Property.manufacturerData]),
      serviceData: serviceData(properties[BlueZ.Property.serviceData]),
      localName: properties[BlueZ.Property.name]?.string)
  }

  /// Properties present with a type BlueZ never sends (or a broken peer sent): each is ignored,
  /// and named here so the caller can log it.
  static func malformed(_ properties: ObjectTree.Properties) -> [String] {
    var out: [String] = []
    for name in [BlueZ.Property.rssi, BlueZ.Property.txPower] {
      if let value = properties[name], value.int == nil {
        out.append("\(name) of type \(value.unwrapped.signature)")
      }
    }
    // An empty array (python-dbusmock's initial `aa{sv}`) is tolerated; anything that is
    // neither a dictionary nor an array of them is not.
    for name in [BlueZ.Property.manufacturerData, BlueZ.Property.serviceData] {
      guard let value = properties[name], dictionaries(value).isEmpty else { continue }
      if case .array(_, let items) = value.unwrapped, items.isEmpty { continue }
      out.append("\(name) of type \(value.unwrapped.signature)")
    }
    return out
  }

  /// Device1.Address, or the address in the path (`dev_C0_FF_EE_00_00_01`).
  static func address(path: ObjectPath, properties: ObjectTree.Properties?) -> BluetoothAddress? {
    if let text = properties?[BlueZ.Property.address]?.string, let address = BluetoothAddress(text) {
      return address
    }
    let last = path.lastComponent
    guard last.hasPrefix(BlueZ.devicePathPrefix) else { return nil }
    return BluetoothAddress(String(last.dropFirst(BlueZ.devicePathPrefix.count)))
  }

  /// `a{qv}` with `ay` values, as `DeviceEntries` keeps them. Also accepts an array of such
  /// dictionaries (python-dbusmock 0.28 sends `aa{qv}`).
  static func manufacturerData(_ value: DBusValue?) -> [ManufacturerData] {
    var out = DeviceEntries<UInt16>()
    for dictionary in dictionaries(value) {
      for entry in dictionary {
        guard let company = entry.key.uint16, let bytes = entry.value.bytes else { continue }
        out.add(company, bytes)
      }
    }
    return out.manufacturerData
  }

  /// `a{sv}` keyed by UUID string with `ay` values, as `DeviceEntries` keeps them.
  static func serviceData(_ value: DBusValue?) -> [ServiceData] {
    var out = DeviceEntries<ServiceUUID>()
    for dictionary in dictionaries(value) {
      for entry in dictionary {
        guard let text = entry.key.string, let uuid = ServiceUUID(text), let bytes = entry.value.bytes else {
          continue
        }
        out.add(uuid, bytes)
      }
    }
    return out.serviceData
  }

  private static func dictionaries(_ value: DBusValue?) -> [[DBusValue.DictionaryEntry]] {
    guard let value = value?.unwrapped else { return [] }
    if let entries = value.dictionaryEntries { return [entries] }
    if case .array(_, let items) = value { return items.compactMap(\.dictionaryEntries) }
    return []
  }
}
