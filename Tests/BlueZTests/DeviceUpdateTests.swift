import BeaconCore
import BeaconTestSupport
import DBusTestSupport
import Foundation
import Testing

@testable import BlueZ
@testable import DBus

/// The fast Device1 PropertiesChanged decoder against the generic path, through a real
/// dbus-daemon: whatever it decodes must mirror exactly as the generic `DBusValue` path would,
/// and whatever it cannot read exactly must be declined (and then arrive whole as a `Signal`).
@Suite(.offThePool, .timeLimit(.minutes(2)))
struct DeviceUpdateTests {
  static let path: ObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"
  static let iBeacon: [UInt8] = [0x02, 0x15] + Array(repeating: 0xAB, count: 16) + [0, 1, 0, 7, 0xC5]

  static func manufacturer(_ entries: [(UInt16, DBusValue)]) -> DBusValue {
    .dictionary(key: "q", value: "v", entries.map { .init(.uint16($0.0), .variant($0.1)) })
  }

  /// Named bodies: whether the fast path must take each.
  static func cases() -> [(String, Bool, [DBusValue])] {
    let device = DBusValue.string(BlueZ.deviceInterface.rawValue)
    let none = DBusValue.stringArray([])
    return [
      (
        "RSSI and ManufacturerData", true,
        [
          device,
          .stringVariantDictionary([
            "RSSI": .int16(-61),
            "ManufacturerData": manufacturer([(0x0059, .bytes([1, 2])), (0x004C, .bytes(iBeacon))]),
          ]), none,
        ]
      ),
      ("RSSI without invalidated", true, [device, .stringVariantDictionary(["RSSI": .int16(-80)])]),
      ("TxPower", true, [device, .stringVariantDictionary(["TxPower": .int16(4)]), none]),
      (
        "empty ManufacturerData", true,
        [device, .stringVariantDictionary(["ManufacturerData": manufacturer([])]), none]
      ),
      (
        "repeated company", true,
        [
          device,
          .stringVariantDictionary([
            "ManufacturerData": manufacturer([(0x004C, .bytes([1])), (0x004C, .bytes([2]))])
          ]), none,
        ]
      ),
      ("RSSI as int32", false, [device, .stringVariantDictionary(["RSSI": .int32(-61)]), none]),
      ("Name", false, [device, .stringVariantDictionary(["Name": .string("van")]), none]),
      (
        "RSSI and Connected", false,
        [
          device,
          .stringVariantDictionary(["RSSI": .int16(-61), "Connected": .bool(true)]),
          none,
        ]
      ),
      (
        "invalidated RSSI", false,
        [device, .stringVariantDictionary(["TxPower": .int16(4)]), .stringArray(["RSSI"])]
      ),
      (
        "Adapter1", false,
        [.string(BlueZ.adapterInterface.rawValue), .stringVariantDictionary(["RSSI": .int16(-1)]), none]
      ),
      (
        "python-dbusmock's aa{qv}", false,
        [
          device,
          .stringVariantDictionary([
            "ManufacturerData": .array(element: "a{qv}", [manufacturer([(0x004C, .bytes(iBeacon))])])
          ]), none,
        ]
      ),
      (
        "company value not ay", false,
        [
          device, .stringVariantDictionary(["ManufacturerData": manufacturer([(0x004C, .string("x"))])]),
          none,
        ]
      ),
      ("nothing changed", false, [device, .stringVariantDictionary([:]), none]),
      ("no arguments after the interface", false, [device]),
    ]
  }

  static let labels = cases().map(\.0)

  /// What the generic path makes of a PropertiesChanged body, starting from `record`.
  static func generic(_ body: [DBusValue], from record: DeviceRecord) -> DeviceRecord {
    var record = record
    let invalidated = body.count > 2 ? body[2].strings ?? [] : []
    record.apply(DeviceChanges(ObjectTree.properties(body[1])), invalidated: invalidated)
    return record
  }

  static func start() throws -> DeviceRecord {
    var record = try #require(DeviceRecord(path: path, properties: [:], at: .now))
    record.rssi = -99
    record.manufacturerData = [ManufacturerData(companyID: 0x0006, data: [9])]
    return record
  }

  /// The two ways the decoder is fed: libdbus (the message marshalled again) and `SignalSocket`
  /// (the bytes as read from the socket).
  enum Path: String, CaseIterable, Sendable {
    case libdbus
    case socket
  }

  /// Sends each body as Device1 PropertiesChanged and returns what a decoding subscription got.
  static func roundTrip(
    _ bodies: [[DBusValue]], via path: Path, paths: [ObjectPath]? = nil
  ) async throws -> [SignalItem<DeviceUpdate>] {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let rules = [
      MatchRule(interface: .properties, member: BlueZ.SignalName.propertiesChanged, pathNamespace: BlueZ.root)
    ]
    let receiver = try Connection(bus.busAddress)
    defer { receiver.close() }
    let batches: AsyncStream<[SignalItem<DeviceUpdate>]>
    var socket: SignalSocket<DeviceUpdate>?
    var subscription: Subscription<SignalItem<DeviceUpdate>>?
    switch path {
    case .libdbus:
      subscription = try await receiver.subscribe(to: rules, decoding: DeviceDecoder().decode)
      batches = subscription!.batches
    case .socket:
      socket = try SignalSocket(bus.busAddress, rules: rules, decode: DeviceDecoder().decode)
      batches = socket!.batches
    }
    let sender = try Connection(bus.busAddress)
    defer { sender.close() }
    for (index, body) in bodies.enumerated() {
      try sender.emit(
        path: paths?[index] ?? Self.path, interface: .properties, member: BlueZ.SignalName.propertiesChanged,
        body)
    }
    var items: [SignalItem<DeviceUpdate>] = []
    for await batch in batches {
      items += batch
      if items.count >= bodies.count { break }
    }
    await subscription?.cancel()
    socket?.cancel()
    return items
  }

  @Test(arguments: Path.allCases)
  func eachShapeIsDecodedOrDeclined(_ path: Path) async throws {
    let cases = Self.cases()
    let items = try await Self.roundTrip(cases.map(\.2), via: path)
    try #require(items.count == cases.count)
    for ((label, fast, body), item) in zip(cases, items) {
      switch item {
      case .decoded(let update):
        #expect(fast, "\(label): decoded, but the fast path must decline it")
        #expect(update.key == DeviceKey(path: Self.path))
        let start = try Self.start()
        var record = start
        record.apply(update)
        #expect(record == Self.generic(body, from: start), "\(label)")
      case .signal(let signal):
        #expect(!fast, "\(label): declined, but the fast path should read it")
        #expect(signal.body == body, "\(label): a declined signal arrives whole")
      }
    }
  }

  /// The BlueZ names are spelled once (`BlueZ.Spelling`); the D-Bus names the decoder compares
  /// bytes with must spell what the DBus module's `String`s do.
  @Test func byteNamesSpellTheDBusNames() {
    typealias Name = BlueZ.Wire
    #expect(Name.propertiesInterface.string == InterfaceName.properties.rawValue)
    #expect(Name.propertiesChanged.string == BlueZ.SignalName.propertiesChanged.rawValue)
    #expect(Name.rssi.string == BlueZ.Property.rssi)
  }

  /// A PropertiesChanged with more companies than `DeviceEntries.limit`, one of them repeated:
  /// the first 32 companies are kept, sorted, the repeated one with its last value, and every
  /// entry past the limit is counted. The generic path keeps the same.
  @Test func companiesPastTheLimitAreCountedNotKept() throws {
    let limit = DeviceEntries<UInt16>.limit
    // Companies 100 down to 1, then company 100 again with other bytes.
    var entries: [(UInt16, DBusValue)] = (1...100).reversed().map { (UInt16($0), .bytes([UInt8($0)])) }
    entries.append((100, .bytes([0xEE])))
    let value = Self.manufacturer(entries)
    let message = try WireSignal.marshalled(
      path: Self.path, interface: .properties, member: BlueZ.SignalName.propertiesChanged,
      [.string(BlueZ.deviceInterface.rawValue), .stringVariantDictionary(["ManufacturerData": value])])
    let overLimit = EventCount()
    let decoder = DeviceDecoder(repeats: nil, overLimit: overLimit)
    let update = message.withUnsafeBytes { bytes in WireSignal.withSignal(bytes) { decoder.decode($0) } ?? nil
    }
    let kept = try #require(update?.manufacturerData)
    let expected = (69...100).map { company in
      ManufacturerData(companyID: UInt16(company), data: company == 100 ? [0xEE] : [UInt8(company)])
    }
    #expect(kept.count == limit)
    #expect(kept == expected)
    #expect(overLimit.count == 100 - limit)
    #expect(DeviceChanges([BlueZ.Property.manufacturerData: value]).manufacturerData == expected)
  }

  /// A device that sends the same ManufacturerData again gets the same array back (no
  /// allocation, shared storage); changed bytes, another company or another device get their own.
  @Test func unchangedManufacturerDataIsHandedOnAsTheSameArray() async throws {
    let one: ObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_77_01"
    let two: ObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_77_02"
    var other = Self.iBeacon
    other[21] = 9
    let sent: [(ObjectPath, UInt16, [UInt8])] = [
      (one, 0x004C, Self.iBeacon), (one, 0x004C, Self.iBeacon), (one, 0x004C, other), (one, 0x0059, other),
      (two, 0x0059, other), (one, 0x0059, other),
    ]
    let bodies = sent.map { _, company, bytes -> [DBusValue] in
      [
        .string(BlueZ.deviceInterface.rawValue),
        .stringVariantDictionary(["ManufacturerData": Self.manufacturer([(company, .bytes(bytes))])]),
        .stringArray([]),
      ]
    }
    let items = try await Self.roundTrip(bodies, via: .socket, paths: sent.map(\.0))
    let arrays = try items.map { item -> [ManufacturerData] in
      guard case .decoded(let update) = item, let data = update.manufacturerData else {
        throw CancellationError()
      }
      return data
    }
    try #require(arrays.count == sent.count)
    for ((_, company, bytes), data) in zip(sent, arrays) {
      #expect(data == [ManufacturerData(companyID: company, data: bytes)])
    }
    func storage(_ data: [ManufacturerData]) -> UnsafeRawPointer? {
      data[0].data.withUnsafeBytes { $0.baseAddress }
    }
    #expect(storage(arrays[0]) == storage(arrays[1]), "unchanged: the same array")
    #expect(storage(arrays[1]) != storage(arrays[2]), "changed bytes: a new array")
    #expect(storage(arrays[3]) != storage(arrays[4]), "another device: its own array")
    #expect(storage(arrays[3]) == storage(arrays[5]), "unchanged again after another device spoke")
  }

  /// The device's key is read from the path bytes in place; it must agree with parsing the path
  /// as a string, and a path of another shape must be declined.
  @Test func keysFromThePathAgree() async throws {
    let good: [ObjectPath] = [
      "/org/bluez/hci0/dev_C0_FF_EE_00_00_01", "/org/bluez/hci12/dev_aa_bb_cc_dd_ee_ff",
      "/org/bluez/hci3/dev_00_00_00_00_00_00", "/org/bluez/hci1/dev_aB_Cd_eF_09_1a_F0",
    ]
    let odd: [ObjectPath] = [
      "/org/bluez/hci0/dev_C0_FF_EE_00_00", "/org/bluez/hci0/dev_C0_FF_EE_00_00_01_02",
      "/org/bluez/usb0/dev_C0_FF_EE_00_00_01", "/org/bluez/hci0/dev_G0_FF_EE_00_00_01",
      "/org/bluez/hci0/dev_C0_FF_EE_00_00_01/service0001", "/org/bluez/hcix/dev_C0_FF_EE_00_00_01",
      // Not hciN by HCIDeviceID's rule (a leading zero, over 9999): declined here, hashed there.
      "/org/bluez/hci01/dev_C0_FF_EE_00_00_01", "/org/bluez/hci10000/dev_C0_FF_EE_00_00_01",
      // The address is read eight bytes at a time: a bad digit or separator in either word.
      "/org/bluez/hci0/dev_C0_FF_EE_00_00_0g", "/org/bluez/hci0/dev_Z0_FF_EE_00_00_01",
      "/org/bluez/hci0/dev_C0_FF_EEa00_00_01", "/org/bluez/hci0/dev_C0_FF_EE_000_00_1",
      "/org/bluez/hci0/dev_C0_F__EE_00_00_01", "/org/bluez/hci0/dev_C0FFF_EE_00_00_01",
    ]
    let body: [DBusValue] = [
      .string(BlueZ.deviceInterface.rawValue), .stringVariantDictionary(["RSSI": .int16(-50)]),
      .stringArray([]),
    ]
    let paths = good + odd
    let items = try await Self.roundTrip(
      Array(repeating: body, count: paths.count), via: .socket, paths: paths)
    try #require(items.count == paths.count)
    #expect(DeviceKey(path: "/org/bluez/hci01/dev_C0_FF_EE_00_00_01")?.path == nil)
    #expect(DeviceKey(path: "/org/bluez/hci9999/dev_C0_FF_EE_00_00_01")?.adapter == 9999)
    for (path, item) in zip(paths, items) {
      switch item {
      case .decoded(let update):
        #expect(good.contains(path), "\(path) should be declined")
        #expect(update.key == DeviceKey(path: path), "\(path)")
        #expect(
          update.key.path
            == ObjectPath(
              path.rawValue.uppercased().replacingOccurrences(of: "/ORG/BLUEZ/HCI", with: "/org/bluez/hci")
                .replacingOccurrences(of: "/DEV_", with: "/dev_")))
      case .signal(let signal):
        #expect(odd.contains(path), "\(path) should be decoded")
        #expect(signal.path == path)
      }
    }
  }

  /// Random property dictionaries (right and wrong keys, right and wrong types): the fast path
  /// may decline any of them, but what it decodes must equal the generic result.
  @Test(arguments: Path.allCases)
  func randomBodiesAgreeWithTheGenericPath(_ path: Path) async throws {
    var generator = SeededGenerator(seed: 8)
    let values: [(String, [DBusValue])] = [
      ("RSSI", [.int16(-40), .int16(-100), .int32(-3), .byte(1), .variant(.int16(-50))]),
      ("TxPower", [.int16(0), .uint16(7)]),
      (
        "ManufacturerData",
        [
          Self.manufacturer([(0x004C, .bytes(Self.iBeacon))]), Self.manufacturer([]),
          Self.manufacturer([(0x004C, .bytes([])), (0x0001, .bytes([5, 6]))]),
          Self.manufacturer([(0x004C, .uint16(3))]), .bytes([1]),
        ]
      ),
      ("ServiceData", [.stringVariantDictionary([:])]),
      ("Name", [.string("x")]),
    ]
    var bodies: [[DBusValue]] = []
    for _ in 0..<300 {
      var dictionary: [String: DBusValue] = [:]
      for (key, options) in values where Bool.random(using: &generator) {
        dictionary[key] = options.randomElement(using: &generator)!
      }
      var body: [DBusValue] = [.string(BlueZ.deviceInterface.rawValue), .stringVariantDictionary(dictionary)]
      switch Int.random(in: 0..<4, using: &generator) {
      case 0: break
      case 1: body.append(.stringArray(["RSSI"]))
      default: body.append(.stringArray([]))
      }
      bodies.append(body)
    }
    let items = try await Self.roundTrip(bodies, via: path)
    try #require(items.count == bodies.count)
    var decoded = 0
    for (body, item) in zip(bodies, items) {
      guard case .decoded(let update) = item else { continue }
      decoded += 1
      let start = try Self.start()
      var record = start
      record.apply(update)
      #expect(record == Self.generic(body, from: start), "\(body)")
    }
    // The generator makes plenty of the shapes BlueZ sends; the fast path must take them.
    #expect(decoded > 10)
  }

  // MARK: Repeats (`RepeatedUpdates`)

  /// A Device1 PropertiesChanged as the bus sends it, with `rssi` and `serial`.
  static func advertisement(
    _ path: ObjectPath = DeviceUpdateTests.path, rssi: Int16, serial: UInt32,
    beacon: [UInt8] = DeviceUpdateTests.iBeacon,
    txPower: Int16? = nil
  ) throws -> [UInt8] {
    var changed: [String: DBusValue] = [
      "RSSI": .int16(rssi), "ManufacturerData": manufacturer([(0x004C, .bytes(beacon))]),
    ]
    if let txPower { changed["TxPower"] = .int16(txPower) }
    return try WireSignal.marshalled(
      path: path, interface: .properties, member: BlueZ.SignalName.propertiesChanged,
      [.string(BlueZ.deviceInterface.rawValue), .stringVariantDictionary(changed), .stringArray([])],
      serial: serial)
  }

  /// What `bytes` decode to with `repeats` (nil: a full decode, nothing remembered).
  static func decode(_ bytes: [UInt8], _ repeats: RepeatedUpdates?) -> DeviceUpdate? {
    bytes.withUnsafeBytes { raw in
      WireSignal.withSignal(raw) { DeviceDecoder(repeats: repeats).decode($0) } ?? nil
    }
  }

  /// Whether `repeats` answers `bytes` from what it remembered, without a full decode: what
  /// `decode` asks it, for a message whose names it accepts.
  static func repeated(_ bytes: [UInt8], _ repeats: RepeatedUpdates) -> DeviceUpdate? {
    bytes.withUnsafeBytes { raw in
      WireSignal.withSignal(raw) { signal -> DeviceUpdate? in
        typealias Name = BlueZ.Wire
        guard signal.member(is: Name.propertiesChanged), signal.interface(is: Name.propertiesInterface),
          signal.signature(is: Name.withInvalidated) || signal.signature(is: Name.withoutInvalidated),
          let path = signal.withPath({ $0.bytes }), let slot = RepeatedUpdates.slot(path)
        else { return nil }
        let start = signal.body.position
        let body = UnsafeRawBufferPointer(rebasing: raw[start...])
        let shape = RepeatedUpdates.Shape(
          pathCount: path.count, bodyCount: body.count, bigEndian: raw[0] == UInt8(ascii: "B"),
          withInvalidated: signal.signature(is: "sa{sv}as"))
        return repeats.update(path: path, body: body, shape, slot: slot)
      } ?? nil
    }
  }

  /// The same advertisement again, with another serial and RSSI, is answered from the one
  /// remembered, and equals a full decode. Any other byte changed, or another device in the same
  /// slot, is decoded in full.
  @Test func aRepeatIsAnsweredFromTheLastMessageAndNothingElseIs() throws {
    let repeats = RepeatedUpdates()
    let first = try Self.advertisement(rssi: -61, serial: 1)
    #expect(Self.repeated(first, repeats) == nil, "nothing remembered yet")
    let decoded = try #require(Self.decode(first, repeats))
    #expect(decoded.rssi == -61)

    let again = try Self.advertisement(rssi: -87, serial: 2)
    let answered = try #require(Self.repeated(again, repeats), "only the serial and the RSSI changed")
    #expect(answered.rssi == -87)
    #expect(answered == Self.decode(again, nil))

    var other = Self.iBeacon
    other[20] ^= 1
    let changed = try Self.advertisement(rssi: -87, serial: 3, beacon: other)
    #expect(Self.repeated(changed, repeats) == nil, "the beacon's bytes changed")
    let full = try #require(Self.decode(changed, repeats))
    #expect(full.manufacturerData == [ManufacturerData(companyID: 0x004C, data: other)])

    let withTxPower = try Self.advertisement(rssi: -87, serial: 4, beacon: other, txPower: 4)
    #expect(Self.repeated(withTxPower, repeats) == nil, "another shape")

    // Another device whose path falls in the same slot.
    let slot = try #require(RepeatedUpdates.slot(path: Self.path))
    let neighbour = try #require(
      (0..<100_000).lazy.map {
        ObjectPath(
          String(format: "/org/bluez/hci0/dev_C0_FF_EE_%02X_%02X_%02X", $0 >> 16, ($0 >> 8) & 0xFF, $0 & 0xFF)
        )
      }
      .first { $0 != Self.path && RepeatedUpdates.slot(path: $0) == slot })
    _ = Self.decode(try Self.advertisement(rssi: -50, serial: 5, beacon: other), repeats)
    let theirs = try Self.advertisement(neighbour, rssi: -50, serial: 6, beacon: other)
    #expect(Self.repeated(theirs, repeats) == nil, "another device in the slot")
    #expect(Self.decode(theirs, repeats)?.key == DeviceKey(path: neighbour))

    // The same address on another adapter: the same slot (the last eight bytes), a path that
    // differs in one byte in its middle. Every byte of the path is compared.
    let twins: (ObjectPath, ObjectPath) = (Self.path, "/org/bluez/hci1/dev_C0_FF_EE_00_00_01")
    #expect(RepeatedUpdates.slot(path: twins.0) == RepeatedUpdates.slot(path: twins.1))
    _ = Self.decode(try Self.advertisement(twins.0, rssi: -50, serial: 7), repeats)
    let twin = try Self.advertisement(twins.1, rssi: -50, serial: 8)
    #expect(Self.repeated(twin, repeats) == nil, "\(twins.1) is not \(twins.0)")
    #expect(Self.decode(twin, repeats)?.key == DeviceKey(path: twins.1))
  }

  /// Differential: a stream of advertisements from a few devices, each a repeat with a new
  /// serial and RSSI or with one byte changed anywhere, decodes with `RepeatedUpdates` exactly as
  /// without it, and most repeats are answered from memory.
  @Test func decodingWithRepeatsEqualsDecodingWithout() throws {
    var generator = SeededGenerator(seed: 19)
    let paths: [ObjectPath] = (1...8).map {
      ObjectPath(String(format: "/org/bluez/hci0/dev_C0_FF_EE_00_00_%02X", $0))
    }
    let repeats = RepeatedUpdates()
    var answered = 0
    var decodedInFull = 0
    for serial in 1...4_000 {
      let path = paths.randomElement(using: &generator)!
      var bytes = try Self.advertisement(
        path, rssi: Int16.random(in: -100 ... -20, using: &generator), serial: UInt32(serial),
        txPower: serial % 97 == 0 ? 3 : nil)
      if Int.random(in: 0..<4, using: &generator) == 0 {
        bytes[Int.random(in: 0..<bytes.count, using: &generator)] ^= UInt8.random(
          in: 1...255, using: &generator)
      }
      let expected = Self.decode(bytes, nil)
      if let early = Self.repeated(bytes, repeats) {
        answered += 1
        #expect(early == expected, "answered from memory: \(bytes)")
      } else if expected != nil {
        decodedInFull += 1
      }
      #expect(Self.decode(bytes, repeats) == expected, "\(bytes)")
    }
    #expect(answered > 2_000, "repeats answered from memory: \(answered)")
    #expect(decodedInFull > 100)
  }
}

extension RepeatedUpdates {
  /// The slot of the device at `path`, for tests.
  static func slot(path: ObjectPath) -> Int? {
    Array(path.rawValue.utf8).withUnsafeBytes { slot($0) }
  }
}
