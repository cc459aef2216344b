import BeaconCore
import DBus

/// What a scan keeps of one Device1: the fields an advertisement is made of, and those pruning
/// needs. Typed fields instead of BlueZ's whole property dictionary, because a busy street (or a
/// flood of random addresses) means thousands of devices: the dictionary of `DBusValue`s cost
/// about 3 KB a device, this about a tenth of that.
struct DeviceRecord: Sendable, Equatable {
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

/// A Device1 PropertiesChanged that carries advertisement data only (RSSI, TxPower,
/// ManufacturerData as `a{qv}` of `ay`), read straight from the message on the D-Bus reader
/// thread. It is the signal BlueZ sends for every advertisement, so it skips the generic
/// `DBusValue` tree: names are compared as C strings and the only allocations are the path and
/// the manufacturer bytes.
///
/// Anything else (another property, another type, invalidated properties) is declined and takes
/// the generic path, which also logs malformed values.
struct DeviceUpdate: Sendable, Equatable {
  var path: ObjectPath
  var rssi: Int16?
  var txPower: Int16?
  /// nil when the change did not carry ManufacturerData; sorted by company, like the generic path.
  var manufacturerData: [ManufacturerData]?

  static func decode(_ signal: borrowing WireSignal) -> DeviceUpdate? {
    guard signal.member(is: BlueZ.SignalName.propertiesChanged), signal.interface(is: .properties),
      signal.signature(is: "sa{sv}as") || signal.signature(is: "sa{sv}")
    else { return nil }
    var body = signal.body
    guard body.string()?.equals(BlueZ.deviceInterface.rawValue) == true,
      let end = body.beginArray(elementAlignment: 8)
    else { return nil }
    var rssi: Int16?
    var txPower: Int16?
    var manufacturerData: [ManufacturerData]?
    while body.position < end {
      guard body.align(8), let key = body.string(), let type = body.signature() else { return nil }
      if key.equals(BlueZ.Property.rssi) {
        guard type.equals("n"), let value = body.int16() else { return nil }
        rssi = value
      } else if key.equals(BlueZ.Property.txPower) {
        guard type.equals("n"), let value = body.int16() else { return nil }
        txPower = value
      } else if key.equals(BlueZ.Property.manufacturerData) {
        guard type.equals("a{qv}"), let data = companies(&body) else { return nil }
        manufacturerData = data
      } else {
        return nil
      }
    }
    guard body.position == end else { return nil }
    // Invalidated properties (`as`) must be absent or empty.
    if signal.signature(is: "sa{sv}as") {
      guard let invalidatedEnd = body.beginArray(elementAlignment: 4), invalidatedEnd == body.position else {
        return nil
      }
    }
    guard rssi != nil || txPower != nil || manufacturerData != nil else { return nil }
    return DeviceUpdate(path: signal.path, rssi: rssi, txPower: txPower, manufacturerData: manufacturerData)
  }

  /// The value of `a{qv}` whose variants hold `ay`; nil for any other shape.
  private static func companies(_ body: inout WireReader) -> [ManufacturerData]? {
    guard let end = body.beginArray(elementAlignment: 8) else { return nil }
    var out: [ManufacturerData] = []
    while body.position < end {
      guard body.align(8), let company = body.uint16(), body.signature()?.equals("ay") == true,
        let bytes = body.bytes()
      else { return nil }
      // A repeated company keeps its last value, as the generic path does.
      out.removeAll { $0.companyID == company }
      out.append(ManufacturerData(companyID: company, data: bytes))
    }
    guard body.position == end else { return nil }
    if out.count > 1 { out.sort { $0.companyID < $1.companyID } }
    return out
  }
}
