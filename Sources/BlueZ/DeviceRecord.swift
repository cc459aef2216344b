import BeaconCore
import DBus

#if canImport(Glibc)
  import Glibc
#endif

/// What a scan keeps of one Device1: the fields an advertisement is made of, and those pruning
/// needs. Typed fields instead of BlueZ's whole property dictionary, because a busy street (or a
/// flood of random addresses) means thousands of devices: the dictionary of `DBusValue`s cost
/// about 3 KB a device, this about a tenth of that.
struct DeviceRecord: Sendable, Equatable {
  /// BlueZ's object path, for RemoveDevice.
  let path: ObjectPath
  var address: BluetoothAddress
  var rssi: Int?
  var txPower: Int?
  var manufacturerData: [ManufacturerData] = []
  var serviceData: [ServiceData] = []
  var name: String?
  /// Paired, Trusted or Connected in BlueZ: never pruned.
  var paired = false
  var trusted = false
  var connected = false
  /// When the scan last reported it (or first mirrored it), for pruning and eviction.
  var lastHeard: ContinuousClock.Instant {
    didSet { removalAsked = false }
  }
  /// RemoveDevice was called for it and it has not been heard since: not asked again.
  var removalAsked = false

  var bonded: Bool { paired || trusted || connected }

  /// From Device1 properties (GetManagedObjects, InterfacesAdded); nil without an address.
  init?(path: ObjectPath, properties: ObjectTree.Properties, at time: ContinuousClock.Instant) {
    guard let address = DeviceAdvertisement.address(path: path, properties: properties) else { return nil }
    self.path = path
    self.address = address
    self.lastHeard = time
    apply(properties, invalidated: [])
  }

  /// A PropertiesChanged read generically: every property BlueZ may send.
  mutating func apply(_ changes: ObjectTree.Properties, invalidated: [String]) {
    for (key, value) in changes {
      switch key {
      case BlueZ.Property.rssi: rssi = value.int
      case BlueZ.Property.txPower: txPower = value.int
      case BlueZ.Property.manufacturerData: manufacturerData = DeviceAdvertisement.manufacturerData(value)
      case BlueZ.Property.serviceData: serviceData = DeviceAdvertisement.serviceData(value)
      case BlueZ.Property.name: name = value.string
      case BlueZ.Property.paired: paired = value.bool ?? false
      case BlueZ.Property.trusted: trusted = value.bool ?? false
      case BlueZ.Property.connected: connected = value.bool ?? false
      default: break
      }
    }
    for key in invalidated {
      switch key {
      case BlueZ.Property.rssi: rssi = nil
      case BlueZ.Property.txPower: txPower = nil
      case BlueZ.Property.manufacturerData: manufacturerData = []
      case BlueZ.Property.serviceData: serviceData = []
      case BlueZ.Property.name: name = nil
      default: break
      }
    }
  }

  /// A PropertiesChanged read by the fast decoder.
  mutating func apply(_ update: DeviceUpdate) {
    if let value = update.rssi { rssi = Int(value) }
    if let value = update.txPower { txPower = Int(value) }
    if let value = update.manufacturerData { manufacturerData = value }
  }

  var advertisement: Advertisement {
    Advertisement(
      address: address, rssi: rssi, txPower: txPower, manufacturerData: manufacturerData,
      serviceData: serviceData, localName: name)
  }
}

/// A device's place in the mirror: its adapter and its address, from the object path
/// (`/org/bluez/hci0/dev_C0_FF_EE_00_00_01`). Hashing two integers instead of the path string was
/// most of what a sighting cost in the mirror.
struct DeviceKey: Hashable, Sendable {
  /// `N` for `hciN`; any other adapter name hashed, with the top bit set.
  var adapter: UInt64
  var address: BluetoothAddress

  /// The 64-bit key `BeaconIndex` files this device under, with the table's `seed` mixed in (the
  /// mix presence uses for beacons, `IndexKeyMix`): no `Hasher`.
  @inline(__always)
  func indexKey(seed: UInt64) -> UInt64 {
    IndexKeyMix.fold(address.uint48 ^ seed ^ IndexKeyMix.p0, adapter ^ IndexKeyMix.p1)
  }

  /// The adapter's identity from its path (`/org/bluez/hci0`).
  static func adapter(_ path: ObjectPath) -> UInt64 { adapterID(Array(path.lastComponent.utf8)[...]) }

  /// A device under `path`'s parent adapter with `address`.
  init(path: ObjectPath, address: BluetoothAddress) {
    let components = path.rawValue.split(separator: "/")
    adapter = components.count >= 2 ? Self.adapterID(Array(components[components.count - 2].utf8)[...]) : 0
    self.address = address
  }

  /// From a device path alone (`…/hciN/dev_XX_…`); nil if it names no address.
  init?(path: ObjectPath) {
    guard let address = DeviceAdvertisement.address(path: path, properties: nil) else { return nil }
    self.init(path: path, address: address)
  }

  init(adapter: UInt64, address: BluetoothAddress) {
    self.adapter = adapter
    self.address = address
  }

  /// The adapter's kernel index when its path segment is `hciN` (`HCIDeviceID`'s rule), else a
  /// hash of the segment.
  static func adapterID(_ name: ArraySlice<UInt8>) -> UInt64 {
    if let id = HCIDeviceID(utf8: name) { return UInt64(id.index) }
    return hashed(name)
  }

  /// FNV-1a, top bit set so it never equals an `hciN`.
  private static func hashed(_ name: ArraySlice<UInt8>) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in name { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
    return hash | 1 << 63
  }

  /// Reads `/org/bluez/hciN/dev_XX_XX_XX_XX_XX_XX` in place; nil for any other path (the generic
  /// path then handles the signal).
  init?(wirePath path: WireString) {
    // memcmp against a static string: `starts(with: "…".utf8)` walked String.UTF8View's indices,
    // about 550 instructions per signal (callgrind, make bench-check).
    let prefix: StaticString = "/org/bluez/hci"
    let prefixCount = prefix.utf8CodeUnitCount
    let count = path.count
    guard count >= prefixCount + 23 else { return nil }
    let bytes = path.bytes
    guard memcmp(bytes.baseAddress!, prefix.utf8Start, prefixCount) == 0 else { return nil }
    // …N/dev_ then 17 characters.
    let devStart = count - 22
    guard bytes[devStart] == UInt8(ascii: "/"), bytes[devStart + 1] == UInt8(ascii: "d"),
      bytes[devStart + 2] == UInt8(ascii: "e"), bytes[devStart + 3] == UInt8(ascii: "v"),
      bytes[devStart + 4] == UInt8(ascii: "_")
    else { return nil }
    // "hciN" by the one adapter rule, so this key equals the generic path's `adapterID`; hci0 to
    // hci9 (one digit, every machine's case) without the generic parser.
    let adapterIndex: UInt64
    if devStart == prefixCount + 1, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[prefixCount]) {
      adapterIndex = UInt64(bytes[prefixCount] - UInt8(ascii: "0"))
    } else {
      guard prefixCount < devStart, let adapter = HCIDeviceID(utf8: bytes[(prefixCount - 3)..<devStart])
      else {
        return nil
      }
      adapterIndex = UInt64(adapter.index)
    }
    var value: UInt64 = 0
    for pair in 0..<6 {
      let at = devStart + 5 + pair * 3
      guard let high = Self.hex(bytes[at]), let low = Self.hex(bytes[at + 1]) else { return nil }
      if pair < 5, bytes[at + 2] != UInt8(ascii: "_") { return nil }
      value = value << 8 | UInt64(high << 4 | low)
    }
    guard let address = BluetoothAddress(uint48: value) else { return nil }
    self.init(adapter: adapterIndex, address: address)
  }

  private static func hex(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    default: nil
    }
  }

  /// BlueZ's path for this device, where the adapter is `hciN`.
  var path: ObjectPath? {
    guard adapter >> 63 == 0 else { return nil }
    let text = address.description.split(separator: ":").joined(separator: "_")
    return ObjectPath("/org/bluez/hci\(adapter)/dev_" + text)
  }
}
