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

extension Advertisement {
  /// Builds an advertisement from BlueZ-style dictionaries, as Device1 reports them:
  /// ManufacturerData (`a{qv}`, company ID → bytes) and ServiceData (`a{sv}`, UUID string →
  /// bytes).
  ///
  /// Entries are ordered by company ID and by UUID, so the same dictionaries always give the same
  /// advertisement. A key that is not a UUID is rejected as `invalidEncoding`; a value that could
  /// not have fit in one advertisement (255 bytes of AD, with its length, type and UUID or company
  /// ID) is rejected as `dataTooLong`.
  public static func parse(
    address: BluetoothAddress, rssi: Int?, txPower: Int? = nil, manufacturerData: [UInt16: [UInt8]],
    serviceData: [String: [UInt8]], localName: String? = nil
  ) -> Result<Advertisement, FrameRejection> {
    var ad = Advertisement(address: address, rssi: rssi, txPower: txPower, localName: localName)
    // Length octet, AD type: the two bytes every AD structure spends before its data.
    let headroom = AdvertisingDataParser.maximumLength - 2
    for (company, bytes) in manufacturerData.sorted(by: { $0.key < $1.key }) {
      guard bytes.count <= headroom - 2 else {
        return .failure(
          FrameRejection(
            .dataTooLong,
            "manufacturer data for company 0x\(Hex.encode([UInt8(company >> 8), UInt8(company & 0xFF)])) is "
              + "\(bytes.count) bytes; at most \(headroom - 2) fit in an advertisement"))
      }
      ad.manufacturerData.append(ManufacturerData(companyID: company, data: bytes))
    }
    var services: [(key: String, entry: ServiceData)] = []
    for (key, bytes) in serviceData {
      guard let uuid = ServiceUUID(key) else {
        return .failure(FrameRejection(.invalidEncoding, "service data key \"\(key)\" is not a UUID"))
      }
      let uuidLength = uuid.uuid16 != nil ? 2 : uuid.isOnBase ? 4 : 16
      guard bytes.count <= headroom - uuidLength else {
        return .failure(
          FrameRejection(
            .dataTooLong,
            "service data for \(uuid) is \(bytes.count) bytes; "
              + "at most \(headroom - uuidLength) fit in an advertisement"))
      }
      services.append((key, ServiceData(uuid: uuid, data: bytes)))
    }
    // By UUID, then by key: "feaa" and its 128-bit spelling are the same UUID.
    ad.serviceData = services.sorted {
      $0.entry.uuid != $1.entry.uuid
        ? $0.entry.uuid.bytes.lexicographicallyPrecedes($1.entry.uuid.bytes) : $0.key < $1.key
    }.map(\.entry)
    return .success(ad)
  }
}
