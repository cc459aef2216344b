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

  /// From Device1 properties (GetManagedObjects, InterfacesAdded); nil without an address (in
  /// the properties or the path).
  init?(path: ObjectPath, changes: DeviceChanges, at time: ContinuousClock.Instant) {
    guard let address = changes.address ?? DeviceAdvertisement.address(path: path) else { return nil }
    self.path = path
    self.address = address
    self.lastHeard = time
    apply(changes, invalidated: [])
  }

  /// From the generic path's properties (`DeviceChanges.init(_:)`).
  init?(path: ObjectPath, properties: ObjectTree.Properties, at time: ContinuousClock.Instant) {
    self.init(path: path, changes: DeviceChanges(properties), at: time)
  }

  /// A PropertiesChanged read in full: every property the reader keeps but Address, which names
  /// the device only when it is first mirrored.
  mutating func apply(_ changes: DeviceChanges, invalidated: [String]) {
    if changes.has(.rssi) { rssi = changes.rssi }
    if changes.has(.txPower) { txPower = changes.txPower }
    if changes.has(.manufacturerData) { manufacturerData = changes.manufacturerData }
    if changes.has(.serviceData) { serviceData = changes.serviceData }
    if changes.has(.name) { name = changes.name }
    if changes.has(.paired) { paired = changes.paired }
    if changes.has(.trusted) { trusted = changes.trusted }
    if changes.has(.connected) { connected = changes.connected }
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
    guard let address = DeviceAdvertisement.address(path: path) else { return nil }
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
    let prefix = BlueZ.Spelling.adapterPathPrefix
    let prefixCount = prefix.utf8CodeUnitCount
    let count = path.count
    guard count >= prefixCount + 23 else { return nil }
    let bytes = path.bytes
    guard memcmp(bytes.baseAddress!, prefix.utf8Start, prefixCount) == 0 else { return nil }
    // …N/dev_ (`BlueZ.devicePathPrefix`, byte by byte) then 17 characters.
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
    // `XX_XX_XX_XX_XX_XX` as two words of eight bytes, `XX_XX_XX` each (offsets 0 and 9), and
    // the `_` between them: a dozen word operations instead of a branch per character.
    let start = bytes.baseAddress! + devStart + 5
    guard start.load(fromByteOffset: 8, as: UInt8.self) == UInt8(ascii: "_"),
      let high = Self.hexTriple(UInt64(littleEndian: start.loadUnaligned(as: UInt64.self))),
      let low = Self.hexTriple(UInt64(littleEndian: start.loadUnaligned(fromByteOffset: 9, as: UInt64.self))),
      let address = BluetoothAddress(uint48: UInt64(high) << 24 | UInt64(low))
    else { return nil }
    self.init(adapter: adapterIndex, address: address)
  }

  /// `XX_XX_XX` (eight bytes, the first in the low byte of `word`) as three bytes, the first
  /// highest; nil unless each X is a hex digit (either case) and both separators are `_`.
  private static func hexTriple(_ word: UInt64) -> UInt32? {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let high: UInt64 = 0x8080_8080_8080_8080
    let separators: UInt64 = 0x0000_FF00_00FF_0000
    guard word & separators == 0x0000_5F00_005F_0000 else { return nil }
    // The separators read as "0" from here on, so that all eight bytes are checked alike.
    let x = word & ~separators | 0x0000_3000_0030_0000
    guard x & high == 0 else { return nil }
    // Bytes below 0x80: adding (0x80 - n) sets a byte's top bit when it is at least n, and no
    // byte carries into the next.
    func atLeast(_ value: UInt64, _ n: UInt64) -> UInt64 { (value &+ (0x80 &- n) &* ones) & high }
    let digit = atLeast(x, 0x30) & ~atLeast(x, 0x3A)
    let lower = x | 0x2020_2020_2020_2020
    let letter = atLeast(lower, 0x61) & ~atLeast(lower, 0x67)
    guard digit | letter == high else { return nil }
    // Each byte's value: its low nibble, plus 9 for a letter.
    let nibbles = (x & 0x0F0F_0F0F_0F0F_0F0F) &+ (letter >> 7) &* 9
    // Byte 0 is X0 << 4 | X1, byte 3 is X3 << 4 | X4, byte 6 is X6 << 4 | X7.
    let pairs = nibbles << 4 | nibbles >> 8
    return UInt32(truncatingIfNeeded: (pairs & 0xFF) << 16 | (pairs >> 24 & 0xFF) << 8 | pairs >> 48 & 0xFF)
  }

  /// BlueZ's path for this device, where the adapter is `hciN`. Its bytes written once into the
  /// string: a mirror past its cap spells one for every new device, and formatting the address
  /// and joining its parts cost about 20,000 instructions each (callgrind).
  var path: ObjectPath? {
    guard adapter >> 63 == 0 else { return nil }
    let prefix = BlueZ.Spelling.adapterPathPrefix
    let device = BlueZ.devicePathPrefix.utf8
    var digits = 1
    var rest = adapter
    while rest >= 10 { (rest, digits) = (rest / 10, digits + 1) }
    // prefix, N, "/", "dev_", then "XX_XX_XX_XX_XX_XX".
    let count = prefix.utf8CodeUnitCount + digits + 1 + device.count + 17
    let text = String(unsafeUninitializedCapacity: count) { out in
      var end = 0
      func put(_ byte: UInt8) {
        out[end] = byte
        end += 1
      }
      for i in 0..<prefix.utf8CodeUnitCount { put(prefix.utf8Start[i]) }
      var n = adapter
      for place in (0..<digits).reversed() {
        out[end + place] = UInt8(ascii: "0") + UInt8(n % 10)
        n /= 10
      }
      end += digits
      put(UInt8(ascii: "/"))
      for byte in device { put(byte) }
      let hex: StaticString = "0123456789ABCDEF"
      for octet in 0..<6 {
        if octet > 0 { put(UInt8(ascii: "_")) }
        let byte = Int(truncatingIfNeeded: address.uint48 >> (40 - 8 * octet) & 0xFF)
        put(hex.utf8Start[byte >> 4])
        put(hex.utf8Start[byte & 0xF])
      }
      return end
    }
    return ObjectPath(text)
  }
}
