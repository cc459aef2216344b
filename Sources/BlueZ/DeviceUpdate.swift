import BeaconCore
import DBus

/// A Device1 PropertiesChanged that carries advertisement data only (RSSI, TxPower,
/// ManufacturerData as `a{qv}` of `ay`), read straight from the message on the D-Bus reader
/// thread. It is the signal BlueZ sends for every advertisement, so it skips the generic
/// `DBusValue` tree: names are compared as C strings and the only allocations are the path and
/// the manufacturer bytes.
///
/// Anything else (another property, another type, invalidated properties) is declined and takes
/// the generic path, which also logs malformed values.
struct DeviceUpdate: Sendable, Equatable {
  var key: DeviceKey
  var rssi: Int16?
  var txPower: Int16?
  /// nil when the change did not carry ManufacturerData; sorted by company, like the generic path.
  var manufacturerData: [ManufacturerData]?

  static func decode(_ signal: borrowing WireSignal) -> DeviceUpdate? {
    guard signal.member(is: BlueZ.SignalName.propertiesChanged), signal.interface(is: .properties),
      signal.signature(is: "sa{sv}as") || signal.signature(is: "sa{sv}"),
      let key = signal.withPath(DeviceKey.init)
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
    return DeviceUpdate(key: key, rssi: rssi, txPower: txPower, manufacturerData: manufacturerData)
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
