import BeaconCore
import DBus

/// What one Device1 property dictionary says, property by property, as `DevicePropertyReader`
/// reads it: which properties it names (`present`) and what each means for the mirror's record
/// (`DeviceRecord.apply`). A repeated name keeps its last value. Read from a GetManagedObjects
/// reply in place (`ManagedObjects`), or from the generic path's `DBusValue`s (`init(_:)`).
struct DeviceChanges: DevicePropertySink, Equatable {
  /// The Device1 properties the mirror keeps.
  enum Property: Int, CaseIterable {
    case rssi, txPower, manufacturerData, serviceData, name, address, paired, trusted, connected

    /// Its name, as `BlueZNames` spells it.
    var name: String {
      switch self {
      case .rssi: BlueZ.Property.rssi
      case .txPower: BlueZ.Property.txPower
      case .manufacturerData: BlueZ.Property.manufacturerData
      case .serviceData: BlueZ.Property.serviceData
      case .name: BlueZ.Property.name
      case .address: BlueZ.Property.address
      case .paired: BlueZ.Property.paired
      case .trusted: BlueZ.Property.trusted
      case .connected: BlueZ.Property.connected
      }
    }

    var bit: UInt16 { 1 << UInt16(rawValue) }
  }

  /// The properties named, one bit each (`Property.bit`).
  private(set) var present: UInt16 = 0
  var rssi: Int?
  var txPower: Int?
  var manufacturerData: [ManufacturerData] = []
  var serviceData: [ServiceData] = []
  var name: String?
  /// Address, when it is one; nil: the path's is the device's (`DeviceRecord.init`).
  var address: BluetoothAddress?
  var paired = false
  var trusted = false
  var connected = false
  /// The type of each property that was of one BlueZ never sends (or a broken peer sent), by
  /// `Property.rawValue`: ignored, and named for the log (`malformed`).
  private var wrongTypes: [Int: String] = [:]

  init() {}

  /// From the generic path's properties (InterfacesAdded, a declined PropertiesChanged, the
  /// tree's): each written back into the wire format and read by `DevicePropertyReader`. A value
  /// that cannot be written (no reader makes one) is left out.
  init(_ properties: ObjectTree.Properties) {
    for (key, value) in properties {
      var writer = WireWriter()
      guard writer.write(.dictionary(key: "s", value: "v", [.init(.string(key), .variant(value))])) else {
        continue
      }
      var changes = self
      let outcome = writer.withReader { reader -> DevicePropertyReader.Outcome in
        guard let end = reader.beginArray(elementAlignment: 8) else { return .nameDoesNotFit }
        return DevicePropertyReader.read(&reader, end: end, into: &changes)
      }
      if case .read = outcome { self = changes }
    }
  }

  func has(_ property: Property) -> Bool { present & property.bit != 0 }

  /// Whether an advertisement property (RSSI, TxPower, ManufacturerData, ServiceData) is named:
  /// a PropertiesChanged of one is a sighting.
  var advertises: Bool {
    present
      & (Property.rssi.bit | Property.txPower.bit | Property.manufacturerData.bit | Property.serviceData.bit)
      != 0
  }

  /// "RSSI of type s" for each property of a type BlueZ never sends, in `Property` order.
  var malformed: [String] {
    Property.allCases.compactMap { property in
      wrongTypes[property.rawValue].map { "\(property.name) of type \($0)" }
    }
  }

  private mutating func named(_ property: Property) {
    present |= property.bit
    wrongTypes[property.rawValue] = nil
  }

  // MARK: DevicePropertySink

  static var advertisementOnly: Bool { false }

  mutating func rssi(_ value: Int16, at offset: Int) {
    named(.rssi)
    rssi = Int(value)
  }

  mutating func txPower(_ value: Int16) {
    named(.txPower)
    txPower = Int(value)
  }

  mutating func manufacturerData(company: UInt16, bytes: UnsafeRawBufferPointer) {
    named(.manufacturerData)
    manufacturerData = [ManufacturerData(companyID: company, data: Array(bytes))]
  }

  mutating func manufacturerData(_ entries: DeviceEntries<UInt16>) {
    named(.manufacturerData)
    manufacturerData = entries.manufacturerData
  }

  mutating func integer(_ property: Property, _ value: Int?, type: WireString) {
    named(property)
    if property == .rssi { rssi = value } else { txPower = value }
    if value == nil { malformed(property, type: type) }
  }

  mutating func serviceData(_ entries: DeviceEntries<ServiceUUID>) {
    named(.serviceData)
    serviceData = entries.serviceData
  }

  mutating func name(_ value: String?) {
    named(.name)
    name = value
  }

  mutating func address(_ value: BluetoothAddress?) {
    named(.address)
    address = value
  }

  mutating func flag(_ property: Property, _ value: Bool) {
    named(property)
    switch property {
    case .paired: paired = value
    case .trusted: trusted = value
    default: connected = value
    }
  }

  mutating func malformed(_ property: Property, type: WireString) {
    wrongTypes[property.rawValue] = type.string
  }
}
