/// Manufacturer-specific data: a Bluetooth SIG company identifier and the bytes after it.
/// BlueZ's Device1.ManufacturerData holds the same thing as `a{qv}`.
public struct ManufacturerData: Hashable, Sendable {
  public var companyID: UInt16
  public var data: [UInt8]

  public init(companyID: UInt16, data: [UInt8]) {
    self.companyID = companyID
    self.data = data
  }
}

/// Service data: a service UUID and the bytes after it. BlueZ's Device1.ServiceData holds the
/// same thing as `a{sv}` keyed by the 128-bit UUID string.
public struct ServiceData: Hashable, Sendable {
  public var uuid: ServiceUUID
  public var data: [UInt8]

  public init(uuid: ServiceUUID, data: [UInt8]) {
    self.uuid = uuid
    self.data = data
  }
}

/// One received advertisement, whichever backend heard it.
///
/// Backends that see raw PDUs (HCI, btsnoop replay, scenario `rawHex`) build it with
/// `Advertisement.parse(address:rssi:adStructures:)`; BlueZ D-Bus builds it from Device1's
/// ManufacturerData and ServiceData dictionaries.
public struct Advertisement: Hashable, Sendable {
  public var address: BluetoothAddress
  /// Received signal strength in dBm. `nil` when the backend did not report one (BlueZ in a VM,
  /// or a PropertiesChanged that carried only ManufacturerData): the sighting still counts as
  /// presence.
  public var rssi: Int?
  /// The advertised TX power level (AD type 0x0A), when present.
  public var txPower: Int?
  public var manufacturerData: [ManufacturerData]
  public var serviceData: [ServiceData]
  /// The local name (AD types 0x08/0x09), when present.
  public var localName: String?

  public init(
    address: BluetoothAddress, rssi: Int? = nil, txPower: Int? = nil,
    manufacturerData: [ManufacturerData] = [], serviceData: [ServiceData] = [], localName: String? = nil
  ) {
    self.address = address
    self.rssi = rssi
    self.txPower = txPower
    self.manufacturerData = manufacturerData
    self.serviceData = serviceData
    self.localName = localName
  }
}

/// What an `AdvertisementSource` reports.
public enum SourceEvent: Hashable, Sendable {
  /// An advertisement was received.
  case sighting(Advertisement)
  /// The backend itself considers this device gone (BlueZ: InterfacesRemoved for the Device1,
  /// about TemporaryTimeout after the last report).
  case lost(BluetoothAddress)
  /// A parse failure at the source (for example an HCI report whose AD structures are malformed).
  case rejected(address: BluetoothAddress?, FrameRejection)
}
