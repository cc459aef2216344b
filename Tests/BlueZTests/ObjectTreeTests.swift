import BeaconCore
import DBus
import Testing

@testable import BlueZ

/// The mirror and the Device1 → Advertisement mapping, without a bus.
struct ObjectTreeTests {
  static func properties(_ entries: [String: DBusValue]) -> DBusValue { .stringVariantDictionary(entries) }

  static func interfaces(_ entries: [String: [String: DBusValue]]) -> DBusValue {
    .dictionary(
      key: "s", value: "a{sv}",
      entries.sorted { $0.key < $1.key }.map { .init(.string($0.key), properties($0.value)) })
  }

  // A function, not a global: see docs/dbus-notes.md (LeakSanitizer and enum spare bits).
  static func managed() -> DBusValue {
    .dictionary(
      key: "o", value: "a{sa{sv}}",
      [
        .init(.objectPath("/org/bluez/hci0"), interfaces(["org.bluez.Adapter1": ["Powered": false]])),
        .init(.objectPath("/org/bluez/hci1"), interfaces(["org.bluez.Adapter1": ["Powered": true]])),
        .init(
          .objectPath("/org/bluez/hci1/dev_C0_FF_EE_00_00_01"),
          interfaces([
            "org.bluez.Device1": [
              "Address": "C0:FF:EE:00:00:01", "RSSI": .int16(-70), "TxPower": .int16(-4),
              "ManufacturerData": .dictionary(
                key: "q", value: "v", [.init(.uint16(0x004C), .variant(.bytes([2, 0x15])))]),
            ]
          ])),
      ])
  }

  @Test func selectsAdapters() {
    let tree = ObjectTree(managedObjects: Self.managed())
    #expect(tree.adapters == ["/org/bluez/hci0", "/org/bluez/hci1"])
    #expect(tree.selectAdapter(named: nil) == "/org/bluez/hci1")  // first powered
    #expect(tree.selectAdapter(named: "hci0") == "/org/bluez/hci0")  // explicit, even unpowered
    #expect(tree.selectAdapter(named: "hci9") == nil)
    #expect(ObjectTree.device("/org/bluez/hci1/dev_C0_FF_EE_00_00_01", isOf: "/org/bluez/hci1"))
    #expect(!ObjectTree.device("/org/bluez/hci1/dev_C0_FF_EE_00_00_01", isOf: "/org/bluez/hci0"))
    #expect(!ObjectTree.device("/org/bluez/hci1", isOf: "/org/bluez/hci1"))
  }

  @Test func partialChangesKeepCachedFields() throws {
    var tree = ObjectTree(managedObjects: Self.managed())
    let path: ObjectPath = "/org/bluez/hci1/dev_C0_FF_EE_00_00_01"
    let changes = tree.propertiesChanged(
      at: path, interface: BlueZ.deviceInterface, changed: Self.properties(["RSSI": .int16(-50)]),
      invalidated: [])
    #expect(changes.keys.sorted() == ["RSSI"])
    let ad = try #require(
      DeviceRecord(path: path, properties: tree[path, BlueZ.deviceInterface]!, at: .now)?.advertisement)
    #expect(ad.address == BluetoothAddress("C0:FF:EE:00:00:01"))
    #expect(ad.rssi == -50)
    #expect(ad.txPower == -4)
    #expect(ad.manufacturerData == [ManufacturerData(companyID: 0x004C, data: [2, 0x15])])

    tree.propertiesChanged(
      at: path, interface: BlueZ.deviceInterface, changed: Self.properties([:]), invalidated: ["RSSI"])
    #expect(DeviceRecord(path: path, properties: tree[path, BlueZ.deviceInterface]!, at: .now)?.rssi == nil)

    let removed = tree.interfacesRemoved(at: path, [BlueZ.deviceInterface.rawValue])
    #expect(removed[BlueZ.deviceInterface]?["Address"] == "C0:FF:EE:00:00:01")
    #expect(tree.objects[path] == nil)
  }

  @Test func toleratesDBusMockWireTypes() {
    // python-dbusmock 0.28 sends ManufacturerData as aa{qv} and ServiceData as aa{sv}.
    let wrong = DBusValue.array(
      element: "a{qv}", [.dictionary(key: "q", value: "v", [.init(.uint16(0x0059), .variant(.bytes([1])))])])
    func read(_ name: String, _ value: DBusValue) -> DeviceChanges { DeviceChanges([name: value]) }
    let manufacturer = BlueZ.Property.manufacturerData
    #expect(read(manufacturer, wrong).manufacturerData == [ManufacturerData(companyID: 0x0059, data: [1])])
    #expect(read(manufacturer, .array(element: "a{qv}", [])).manufacturerData == [])
    #expect(read(manufacturer, .array(element: "a{qv}", [])).malformed == [])
    #expect(read(BlueZ.Property.serviceData, .array(element: "a{sv}", [])).serviceData == [])
    #expect(read(manufacturer, .string("nonsense")).manufacturerData == [])
    #expect(read(manufacturer, .string("nonsense")).malformed == ["ManufacturerData of type s"])
  }

  @Test func addressFallsBackToThePath() {
    #expect(
      DeviceAdvertisement.address(path: "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF")
        == BluetoothAddress("AA:BB:CC:DD:EE:FF"))
    #expect(DeviceAdvertisement.address(path: "/org/bluez/hci0") == nil)
  }
}
