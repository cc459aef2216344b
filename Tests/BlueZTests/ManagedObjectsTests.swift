import BeaconCore
import BeaconTestSupport
import DBusTestSupport
import Testing

@testable import BlueZ
@testable import DBus

/// `GetManagedObjects` read in place (`ManagedObjects`) against the generic path it replaces
/// (`ObjectTree(managedObjects:)` then `DeviceMirror.reseed(from:)`): the same devices and the same
/// tree for every reply, and a clear error, never a partial result, for one that does not fit.
@Suite(.timeLimit(.minutes(2)))
struct ManagedObjectsTests {
  static let time = ContinuousClock.now

  static func interfaces(_ entries: [(String, [(String, DBusValue)])]) -> DBusValue {
    .dictionary(
      key: "s", value: "a{sv}",
      entries.map { name, properties in
        .init(
          .string(name),
          .dictionary(key: "s", value: "v", properties.map { .init(.string($0.0), .variant($0.1)) }))
      })
  }

  static func reply(_ objects: [(ObjectPath, DBusValue)]) -> DBusValue {
    .dictionary(key: "o", value: "a{sa{sv}}", objects.map { .init(.objectPath($0.0), $0.1) })
  }

  static func manufacturer(_ entries: [(UInt16, [UInt8])]) -> DBusValue {
    .dictionary(key: "q", value: "v", entries.map { .init(.uint16($0.0), .variant(.bytes($0.1))) })
  }

  static let iBeacon: [UInt8] = [0x02, 0x15] + Array(repeating: 0xAB, count: 16) + [0, 1, 0, 7, 0xC5]
  static let introspectable = ("org.freedesktop.DBus.Introspectable", [(String, DBusValue)]())
  static let propertiesInterface = ("org.freedesktop.DBus.Properties", [(String, DBusValue)]())

  /// A reply as bluetoothd (and the bench's fake, and python-dbusmock) sends one, with odd corners.
  static func bluetoothd() -> DBusValue { reply(objects()) }

  static func objects() -> [(ObjectPath, DBusValue)] {
    [
      // The root: ObjectManager only, no properties; and an object with no interface at all.
      ("/", interfaces([("org.freedesktop.DBus.ObjectManager", [])])),
      ("/org/bluez", interfaces([])),
      (
        "/org/bluez/hci0",
        interfaces([
          introspectable,
          (
            "org.bluez.Adapter1",
            [
              ("Address", .string("00:11:22:33:44:55")), ("Powered", .bool(true)),
              ("Discovering", .bool(false)), ("Class", .uint32(0x7C010C)),
              ("UUIDs", .stringArray(["0000110e-0000-1000-8000-00805f9b34fb"])),
              ("Roles", .stringArray(["central", "peripheral"])),
            ]
          ),
          (
            "org.bluez.AdvertisementMonitorManager1",
            [
              ("SupportedMonitorTypes", .stringArray(["or_patterns"])),
              ("SupportedFeatures", .stringArray([])),
            ]
          ),
          propertiesInterface,
        ])
      ),
      ("/org/bluez/hci1", interfaces([("org.bluez.Adapter1", [("Powered", .bool(false))])])),
      (
        "/org/bluez/hci0/dev_C0_FF_EE_00_00_01",
        interfaces([
          introspectable,
          (
            "org.bluez.Device1",
            [
              ("Address", .string("C0:FF:EE:00:00:01")), ("AddressType", .string("public")),
              ("Alias", .string("C0-FF-EE-00-00-01")), ("Paired", .bool(false)), ("Trusted", .bool(true)),
              ("Blocked", .bool(false)), ("LegacyPairing", .bool(false)), ("RSSI", .int16(-61)),
              ("TxPower", .int16(-4)), ("Connected", .bool(false)),
              ("UUIDs", .stringArray(["0000feaa-0000-1000-8000-00805f9b34fb"])),
              ("Adapter", .objectPath("/org/bluez/hci0")),
              ("ManufacturerData", manufacturer([(0x0059, [1, 2]), (0x004C, iBeacon)])),
              (
                "ServiceData",
                .dictionary(
                  key: "s", value: "v",
                  [.init(.string("0000feaa-0000-1000-8000-00805f9b34fb"), .variant(.bytes([0x10, 0xEB])))])
              ),
              ("Name", .string("van 7")), ("ServicesResolved", .bool(false)),
              ("AdvertisingFlags", .bytes([6])),
              // Types no Device1 has: skipped all the same.
              (
                "Odd",
                .structure([.int64(-1), .double(2.5), .signature("a{sv}"), .array(element: "(qs)", [])])
              ),
              ("Nested", .variant(.variant(.uint64(7)))),
            ]
          ),
          propertiesInterface,
          ("org.bluez.Battery1", [("Percentage", .byte(80))]),
        ])
      ),
      // Only Device1: it leaves the tree; RSSI of a type BlueZ never sends.
      (
        "/org/bluez/hci0/dev_C0_FF_EE_00_00_02",
        interfaces([("org.bluez.Device1", [("RSSI", .string("loud")), ("Paired", .bool(true))])])
      ),
      // The address from the Address property, not the path; python-dbusmock's `aa{qv}`.
      (
        "/org/bluez/hci1/dev_C0_FF_EE_00_00_03",
        interfaces([
          (
            "org.bluez.Device1",
            [
              ("Address", .string("C0:FF:EE:00:00:33")), ("Connected", .bool(true)),
              ("ManufacturerData", .array(element: "a{qv}", [manufacturer([(0x004C, iBeacon)])])),
              ("RSSI", .variant(.int32(-90))),
            ]
          )
        ])
      ),
      // No address anywhere: not a device the mirror can keep, and gone from the tree too.
      ("/org/bluez/hci0/thing", interfaces([("org.bluez.Device1", [("RSSI", .int16(-1))])])),
      // A path without `dev_` but with an Address.
      (
        "/org/bluez/hci0/peer",
        interfaces([("org.bluez.Device1", [("Address", .string("C0:FF:EE:00:00:04"))]), introspectable])
      ),
      // Objects below a device that are not devices (GATT).
      (
        "/org/bluez/hci0/dev_C0_FF_EE_00_00_01/service000a",
        interfaces([
          (
            "org.bluez.GattService1",
            [
              ("UUID", .string("0000180f-0000-1000-8000-00805f9b34fb")), ("Primary", .bool(true)),
              ("Device", .objectPath("/org/bluez/hci0/dev_C0_FF_EE_00_00_01")), ("Handle", .uint16(10)),
              ("Includes", .array(element: "o", [])),
            ]
          )
        ])
      ),
      // Another service's objects on the same reply.
      (
        "/org/example/other",
        interfaces([("org.example.Thing", [("Value", .dictionary(key: "s", value: "as", []))])])
      ),
    ]
  }

  /// The generic path: the whole reply as a `DBusValue` tree, then the mirror seeded from it.
  static func generic(_ reply: DBusValue) -> (ObjectTree, [DeviceKey: DeviceRecord]) {
    var tree = ObjectTree(managedObjects: reply)
    var mirror = DeviceMirror()
    mirror.reseed(from: &tree, at: time)
    return (tree, mirror.devices)
  }

  static func inPlace(_ reply: DBusValue) throws -> ManagedObjects {
    try WireMessage.withReply(carrying: [reply]) { try ManagedObjects($0, at: time) }
  }

  @Test func readsAsTheGenericPathDoes() throws {
    let reply = Self.bluetoothd()
    let (tree, devices) = Self.generic(reply)
    let seed = try Self.inPlace(reply)
    #expect(seed.tree == tree)
    #expect(seed.devices == devices)
    // What that is, so that the comparison is not between two empty results.
    #expect(seed.tree.adapters == ["/org/bluez/hci0", "/org/bluez/hci1"])
    #expect(seed.tree.selectAdapter(named: nil) == "/org/bluez/hci0")
    #expect(Monitor.offersPatterns(seed.tree, on: "/org/bluez/hci0"))
    #expect(seed.devices.count == 4)
    #expect(
      seed.tree.objects["/org/bluez/hci0/dev_C0_FF_EE_00_00_01"]?.keys.map(\.rawValue).sorted() == [
        "org.bluez.Battery1", "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Properties",
      ])
    #expect(seed.tree.objects["/org/bluez/hci0/dev_C0_FF_EE_00_00_02"] == nil)
    #expect(seed.tree.objects["/org/bluez/hci0/thing"] == nil)
    #expect(seed.tree.objects["/org/bluez"] == [:])
    let first = try #require(
      seed.devices[DeviceKey(adapter: 0, address: BluetoothAddress("C0:FF:EE:00:00:01")!)])
    #expect(first.rssi == -61 && first.txPower == -4 && first.name == "van 7" && first.trusted)
    #expect(first.manufacturerData.map(\.companyID) == [0x004C, 0x0059])
    #expect(first.serviceData.count == 1)
    let second = try #require(
      seed.devices[DeviceKey(adapter: 0, address: BluetoothAddress("C0:FF:EE:00:00:02")!)])
    #expect(second.rssi == nil && second.paired)
    let third = try #require(
      seed.devices[DeviceKey(adapter: 1, address: BluetoothAddress("C0:FF:EE:00:00:33")!)])
    #expect(third.rssi == -90 && third.connected && third.manufacturerData.map(\.companyID) == [0x004C])
  }

  /// The properties the one Device1 reader keeps are the ones a `DeviceRecord` is made of.
  @Test func keepsEveryPropertyTheRecordReads() {
    let kept = Set(DeviceChanges.Property.allCases.map(\.name))
    let read: Set<String> = [
      "Address", "RSSI", "TxPower", "ManufacturerData", "ServiceData", "Name", "Paired", "Trusted",
      "Connected",
    ]
    #expect(kept == read)
    #expect(ManagedObjects.device.string == BlueZ.deviceInterface.rawValue)
  }

  /// Through a real dbus-daemon: an `org.bluez` whose GetManagedObjects replies `a{sv}` stops the
  /// source at start with an error that says so (before, the reply read as an empty tree).
  @Test func aBluetoothdWithAnotherReplyFailsClearly() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let fake = try Connection(bus.busAddress)
    defer { fake.close() }
    _ = try await fake.requestName(BlueZ.service)
    let exported = try fake.export("/") { call in
      guard call.member == BlueZ.Method.getManagedObjects else {
        return .failure(DBusError.unknownMethod(call))
      }
      return .success([.stringVariantDictionary(["Powered": .bool(true)])])
    }
    defer { exported.unexport() }
    let error = await #expect(throws: DBusError.self) {
      _ = try await BlueZAdvertisementSource(bus: bus.busAddress).eventStream()
    }
    #expect(error?.name == .invalidArgs)
    #expect(error?.message == "GetManagedObjects replied with signature 'a{sv}', not 'a{oa{sa{sv}}}'")
  }

  @Test func emptyReply() throws {
    let seed = try Self.inPlace(Self.reply([]))
    #expect(seed.tree == ObjectTree() && seed.devices.isEmpty)
  }

  /// A path the reply names twice: its last entry wins, as in the tree.
  @Test func repeatedPathsKeepTheirLastEntry() throws {
    let path: ObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"
    let device = Self.interfaces([("org.bluez.Device1", [("RSSI", .int16(-50))])])
    for reply in [
      Self.reply([(path, device), (path, Self.interfaces([Self.introspectable]))]),
      Self.reply([(path, Self.interfaces([Self.introspectable])), (path, device)]),
      Self.reply([
        (path, device),
        (path, Self.interfaces([("org.bluez.Device1", [("Address", .string("C0:FF:EE:00:00:09"))])])),
      ]),
    ] {
      let (tree, devices) = Self.generic(reply)
      let seed = try Self.inPlace(reply)
      #expect(seed.tree == tree)
      #expect(seed.devices == devices)
    }
  }

  /// A thousand devices, as the bench caches them.
  @Test func aThousandDevices() throws {
    let reply = Self.reply(
      (0..<1_000).map { index in
        let address = BluetoothAddress(uint48: 0xC0FF_EE00_0000 + UInt64(index))!
        let path = ObjectPath("/org/bluez/hci0/dev_" + address.description.replacing(":", with: "_"))
        return (
          path,
          Self.interfaces([
            Self.introspectable,
            (
              "org.bluez.Device1",
              [
                ("Address", .string(address.description)), ("RSSI", .int16(Int16(-40 - index % 50))),
                ("ManufacturerData", Self.manufacturer([(0x004C, Self.iBeacon)])),
                ("UUIDs", .stringArray([])),
              ]
            ),
            Self.propertiesInterface,
          ])
        )
      })
    let (tree, devices) = Self.generic(reply)
    let seed = try Self.inPlace(reply)
    #expect(seed.devices.count == 1_000)
    #expect(seed.devices == devices)
    #expect(seed.tree == tree)
  }

  @Test func anotherSignatureIsAClearError() throws {
    let error = try #require(throws: DBusError.self) {
      try WireMessage.withReply(carrying: [.stringVariantDictionary(["RSSI": .int16(-1)])]) {
        try ManagedObjects($0, at: Self.time)
      }
    }
    #expect(error.name == .invalidArgs)
    #expect(error.message.contains("signature 'a{sv}', not 'a{oa{sa{sv}}}'"))
    let empty = try #require(throws: DBusError.self) {
      try WireMessage.withReply(carrying: []) { try ManagedObjects($0, at: Self.time) }
    }
    #expect(empty.message.contains("signature ''"))
  }

  /// Cut short anywhere (as no bus delivers, but as the reader must survive): an error naming
  /// the fault, never part of an object. The outer array's length is cut to match, so that the
  /// reader walks into the cut object; a cut between two objects is a shorter, valid reply and
  /// must read as exactly those objects.
  @Test func malformedBytesAreAnErrorNotAPartialSeed() throws {
    let objects = Self.objects()
    let prefixes = (0...objects.count).map { Self.generic(Self.reply(Array(objects.prefix($0)))) }
    let bytes = try WireMessage.withReply(carrying: [Self.reply(objects)]) { message in
      Array(UnsafeRawBufferPointer(start: message.base, count: message.count))
    }
    let bodyStart = try bytes.withUnsafeBytes { try #require(Wire.header($0)).bodyStart }
    let arrayStart = bodyStart + 8
    var failures = 0
    var shorter = 0
    for length in arrayStart..<bytes.count {
      var cut = Array(bytes[0..<length])
      cut.withUnsafeMutableBytes { raw in
        raw.storeBytes(of: UInt32(length - arrayStart).littleEndian, toByteOffset: bodyStart, as: UInt32.self)
      }
      let result = cut.withUnsafeBytes { raw -> Result<ManagedObjects, DBusError> in
        guard let header = Wire.header(raw) else { return .failure(DBusError(.failed, "no header")) }
        return Result { () throws(DBusError) in
          try ManagedObjects(WireMessage(header: header, bytes: raw), at: Self.time)
        }
      }
      switch result {
      case .failure(let error):
        #expect(error.message.hasPrefix("malformed GetManagedObjects reply: "), "\(error)")
        failures += 1
      case .success(let seed):
        let whole = prefixes.contains { $0.0 == seed.tree && $0.1 == seed.devices }
        #expect(whole, "a reply cut at \(length) of \(bytes.count) bytes read as part of an object")
        shorter += 1
      }
    }
    #expect(failures > 0 && shorter >= objects.count)
    // The outer array's length past the end of the message.
    var overrun = bytes
    overrun.withUnsafeMutableBytes { raw in
      raw.storeBytes(
        of: UInt32(bytes.count - arrayStart + 8).littleEndian, toByteOffset: bodyStart, as: UInt32.self)
    }
    let error = try #require(throws: DBusError.self) {
      try overrun.withUnsafeBytes { raw throws(DBusError) in
        try ManagedObjects(WireMessage(header: Wire.header(raw)!, bytes: raw), at: Self.time)
      }
    }
    #expect(error.message.contains("malformed GetManagedObjects reply: its object array runs past the end"))
  }
}
