import BeaconCore
import Testing

@testable import BlueZ
@testable import DBus

/// One table of Device1 property dictionaries, hostile ones included, through every door by
/// which Device1 properties reach the mirror: a PropertiesChanged as received (the fast decoder,
/// or the generic path when it declines), a PropertiesChanged and an InterfacesAdded read
/// generically, and a GetManagedObjects reply read in place. Every door must make the record
/// the row expects; the expectations are written out by hand, not computed by the reader.
@Suite struct DeviceDoorsTests {
  static let path: ObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"
  static let time = ContinuousClock.now
  static let iBeacon: [UInt8] = [0x02, 0x15] + Array(repeating: 0xAB, count: 16) + [0, 1, 0, 7, 0xC5]
  static let eddystone = "0000feaa-0000-1000-8000-00805f9b34fb"

  struct Row: CustomTestStringConvertible {
    var label: String
    /// The dictionary's entries in wire order (a name may repeat).
    var entries: [(String, DBusValue)]
    /// Bytes of the marshalled dictionary replaced by others of the same length (what libdbus
    /// would not marshal: strings that are not UTF-8).
    var patches: [(String, [UInt8])] = []
    /// Whether the fast decoder takes it as a PropertiesChanged.
    var fast: Bool
    var rssi: Int? = nil
    var txPower: Int? = nil
    var manufacturerData: [ManufacturerData] = []
    var serviceData: [ServiceData] = []
    var name: String? = nil
    var paired = false
    var trusted = false
    var connected = false
    /// The address a door that first mirrors the device gives it; nil: the path's.
    var address: BluetoothAddress? = nil
    /// What the generic path logs as malformed.
    var malformed: [String] = []
    /// ManufacturerData entries the fast decoder counts past the limit.
    var overLimit = 0

    var testDescription: String { label }

    /// The record a door makes from a device it had not mirrored (`first`), or one it had with
    /// nothing in it.
    func record(first: Bool) throws -> DeviceRecord {
      var record = try #require(
        DeviceRecord(path: DeviceDoorsTests.path, changes: DeviceChanges(), at: DeviceDoorsTests.time))
      if first, let address { record.address = address }
      record.rssi = rssi
      record.txPower = txPower
      record.manufacturerData = manufacturerData
      record.serviceData = serviceData
      record.name = name
      record.paired = paired
      record.trusted = trusted
      record.connected = connected
      return record
    }
  }

  static func companies(_ entries: [(UInt16, DBusValue)]) -> DBusValue {
    .dictionary(key: "q", value: "v", entries.map { .init(.uint16($0.0), .variant($0.1)) })
  }

  static let rows: [Row] = {
    let uuid = ServiceUUID(eddystone)!
    // 5,000 companies from the highest down, then the first again with other bytes: 32 kept, the
    // repeat of a kept one taking its place, the rest counted.
    let flood: [(UInt16, DBusValue)] =
      (1...5_000).reversed().map { (UInt16($0), .bytes([UInt8($0 & 0xFF)])) } + [(5_000, .bytes([0xEE]))]
    return [
      Row(
        label: "a beacon",
        entries: [("RSSI", .int16(-61)), ("ManufacturerData", companies([(0x004C, .bytes(iBeacon))]))],
        fast: true, rssi: -61, manufacturerData: [ManufacturerData(companyID: 0x004C, data: iBeacon)]),
      Row(
        label: "every property",
        entries: [
          ("Address", .string("C0:FF:EE:00:00:99")), ("AddressType", .string("random")),
          ("Name", .string("van 7")),
          ("Alias", .string("van")), ("RSSI", .int16(-70)), ("TxPower", .int16(4)),
          ("ManufacturerData", companies([(0x0059, .bytes([1, 2])), (0x004C, .bytes([3]))])),
          (
            "ServiceData",
            .dictionary(key: "s", value: "v", [.init(.string(eddystone), .variant(.bytes([0x10, 0x20])))])
          ),
          ("Paired", .bool(true)), ("Trusted", .bool(false)), ("Connected", .bool(true)),
          ("UUIDs", .stringArray([eddystone])),
        ],
        fast: false, rssi: -70, txPower: 4,
        manufacturerData: [
          ManufacturerData(companyID: 0x004C, data: [3]), ManufacturerData(companyID: 0x0059, data: [1, 2]),
        ],
        serviceData: [ServiceData(uuid: uuid, data: [0x10, 0x20])], name: "van 7", paired: true,
        connected: true,
        address: BluetoothAddress("C0:FF:EE:00:00:99")),
      Row(
        label: "wrong variant types",
        entries: [
          ("RSSI", .string("loud")), ("TxPower", .int32(7)), ("Name", .int16(3)), ("Paired", .string("yes")),
          ("ManufacturerData", .string("none")), ("ServiceData", .uint32(1)), ("Address", .int16(1)),
        ],
        fast: false, txPower: 7,
        malformed: ["RSSI of type s", "ManufacturerData of type s", "ServiceData of type u"]),
      Row(
        label: "variants in variants",
        entries: [
          ("RSSI", .variant(.variant(.int16(-55)))),
          ("ManufacturerData", companies([(0x0006, .variant(.variant(.bytes([7]))))])),
        ],
        fast: false, rssi: -55, manufacturerData: [ManufacturerData(companyID: 0x0006, data: [7])]),
      Row(
        label: "python-dbusmock's arrays of dictionaries",
        entries: [
          ("ManufacturerData", .array(element: "a{qv}", [companies([(0x0059, .bytes([1]))])])),
          ("ServiceData", .array(element: "a{sv}", [])),
        ],
        fast: false, manufacturerData: [ManufacturerData(companyID: 0x0059, data: [1])]),
      Row(
        label: "entries of other types",
        entries: [
          (
            "ManufacturerData",
            companies([(0x0001, .string("x")), (0x0002, .bytes([2])), (0x0003, .uint16(3))])
          ),
          (
            "ServiceData",
            .dictionary(
              key: "s", value: "v",
              [
                .init(.string("not a uuid"), .variant(.bytes([1]))),
                .init(.string(eddystone), .variant(.bytes([5]))),
              ])
          ),
        ],
        fast: false, manufacturerData: [ManufacturerData(companyID: 0x0002, data: [2])],
        serviceData: [ServiceData(uuid: uuid, data: [5])]),
      Row(
        label: "a dictionary of bytes, not of variants",
        entries: [
          ("ManufacturerData", .dictionary(key: "q", value: "ay", [.init(.uint16(0x0001), .bytes([9]))]))
        ],
        fast: false, manufacturerData: [ManufacturerData(companyID: 0x0001, data: [9])]),
      Row(
        label: "names repeated",
        entries: [
          ("RSSI", .int16(-40)), ("RSSI", .int16(-41)),
          ("ManufacturerData", companies([(0x004C, .bytes([1]))])),
          ("ManufacturerData", .string("gone")), ("Name", .string("a")), ("Name", .string("b")),
        ],
        fast: false, rssi: -41, name: "b", malformed: ["ManufacturerData of type s"]),
      Row(
        label: "RSSI repeated, then well typed", entries: [("RSSI", .string("x")), ("RSSI", .int16(-9))],
        fast: false,
        rssi: -9),
      Row(
        label: "a flood of companies", entries: [("ManufacturerData", companies(flood))], fast: true,
        manufacturerData: (4_969...5_000).map {
          ManufacturerData(companyID: UInt16($0), data: $0 == 5_000 ? [0xEE] : [UInt8($0 & 0xFF)])
        }, overLimit: 5_001 - 32 - 1),
      Row(
        label: "names and values that are not UTF-8",
        entries: [("RSS~", .int16(-1)), ("Name", .string("van~")), ("TxPower", .int16(3))],
        patches: [("RSS~", Array("RSS".utf8) + [0xFF]), ("van~", Array("van".utf8) + [0xC3])], fast: false,
        txPower: 3, name: "van\u{FFFD}"),
      Row(
        label: "integers of other types",
        entries: [("RSSI", .byte(200)), ("TxPower", .uint64(.max))], fast: false, rssi: 200,
        malformed: ["TxPower of type t"]),
      Row(label: "nothing", entries: [], fast: false),
    ]
  }()

  static func dictionary(_ row: Row) -> DBusValue {
    .dictionary(key: "s", value: "v", row.entries.map { .init(.string($0.0), .variant($0.1)) })
  }

  /// `bytes` with each patch's text replaced (each must be there once).
  static func patched(_ bytes: [UInt8], _ row: Row) throws -> [UInt8] {
    var bytes = bytes
    for (text, replacement) in row.patches {
      let old = Array(text.utf8)
      let at = (0...(bytes.count - old.count)).filter { bytes[$0..<$0 + old.count].elementsEqual(old) }
      try #require(at.count == 1, "\(text) once in the message")
      bytes.replaceSubrange(at[0]..<at[0] + old.count, with: replacement)
    }
    return bytes
  }

  /// A PropertiesChanged of the row, as received.
  static func propertiesChanged(_ row: Row) throws -> [UInt8] {
    try patched(
      WireSignal.marshalled(
        path: path, interface: .properties, member: BlueZ.SignalName.propertiesChanged,
        [.string(BlueZ.deviceInterface.rawValue), dictionary(row), .stringArray([])]), row)
  }

  /// The generic path's `DBusValue` of the row's dictionary: what a reader makes of the bytes
  /// received (libdbus refuses the strings that are not UTF-8; the in-place value reader
  /// repairs them, as the tree's other interfaces are read).
  static func generic(_ message: [UInt8]) throws -> ObjectTree.Properties {
    try message.withUnsafeBytes { raw in
      let value = WireSignal.withSignal(raw) { signal -> DBusValue? in
        var body = signal.body
        guard body.string() != nil else { return nil }
        return Array("a{sv}".utf8).withUnsafeBytes { body.value(ofType: $0, depth: 0) }
      }
      return ObjectTree.properties(try #require(value ?? nil))
    }
  }

  @Test(arguments: rows)
  func everyDoorMakesTheSameRecord(_ row: Row) throws {
    let time = Self.time
    let blank = try #require(DeviceRecord(path: Self.path, changes: DeviceChanges(), at: time))
    let message = try Self.propertiesChanged(row)
    if row.patches.isEmpty {
      #expect(try ObjectTree.properties(Self.dictionary(row)) == Self.generic(message))
    }
    let properties = try Self.generic(message)

    // A PropertiesChanged as the session reads it: the fast decoder, else the generic path.
    let overLimit = EventCount()
    let decoder = DeviceDecoder(repeats: nil, overLimit: overLimit)
    let update = message.withUnsafeBytes { raw in WireSignal.withSignal(raw) { decoder.decode($0) } ?? nil }
    #expect((update != nil) == row.fast, "the fast decoder takes it: \(row.fast)")
    var received = blank
    if let update {
      received.apply(update)
    } else {
      received.apply(DeviceChanges(properties), invalidated: [])
    }
    #expect(received == (try row.record(first: false)), "PropertiesChanged as received")
    #expect(overLimit.count == (row.fast ? row.overLimit : 0))

    // The generic PropertiesChanged, whatever the fast decoder would do.
    let changes = DeviceChanges(properties)
    var changed = blank
    changed.apply(changes, invalidated: [])
    #expect(changed == (try row.record(first: false)), "PropertiesChanged read generically")
    #expect(changes.malformed == row.malformed)

    // InterfacesAdded: the device first mirrored from the generic path's properties.
    var mirror = DeviceMirror()
    mirror.adapter = "/org/bluez/hci0"
    _ = mirror.added(Self.path, DeviceChanges(properties), at: time)
    let key = try #require(DeviceKey(path: Self.path))
    let addedKey = DeviceKey(path: Self.path, address: row.address ?? key.address)
    #expect(mirror[addedKey] == (try row.record(first: true)), "InterfacesAdded")

    // GetManagedObjects, read in place.
    let reply = DBusValue.dictionary(
      key: "o", value: "a{sa{sv}}",
      [
        .init(
          .objectPath(Self.path),
          .dictionary(
            key: "s", value: "a{sv}", [.init(.string(BlueZ.deviceInterface.rawValue), Self.dictionary(row))]))
      ])
    let bytes = try Self.patched(
      WireMessage.withReply(carrying: [reply]) {
        Array(UnsafeRawBufferPointer(start: $0.base, count: $0.count))
      }, row)
    let seed = try bytes.withUnsafeBytes { raw throws(DBusError) in
      try ManagedObjects(WireMessage(header: Wire.header(raw)!, bytes: raw), at: time)
    }
    #expect(seed.devices[addedKey] == (try row.record(first: true)), "GetManagedObjects")
    #expect(seed.devices.count == 1)
  }

  /// The generic path's values written back (`WireWriter`) are the bytes libdbus marshals.
  @Test(arguments: rows)
  func writtenBackAsLibdbusMarshals(_ row: Row) throws {
    guard row.patches.isEmpty else { return }
    let value = Self.dictionary(row)
    var writer = WireWriter()
    let written = writer.write(value)
    #expect(written)
    let marshalled = try WireMessage.withReply(carrying: [value]) { message in
      Array(
        UnsafeRawBufferPointer(
          start: message.base + message.header.bodyStart, count: message.count - message.header.bodyStart))
    }
    #expect(writer.bytes == marshalled)
  }
}
