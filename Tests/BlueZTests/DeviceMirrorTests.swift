import BeaconCore
import DBus
import Testing

@testable import BlueZ

/// The device mirror's rules without a bus: sightings, losses, eviction past the cap and the
/// stale selection for RemoveDevice.
struct DeviceMirrorTests {
  static let hci0: ObjectPath = "/org/bluez/hci0"
  static let hci1: ObjectPath = "/org/bluez/hci1"
  static let start = ContinuousClock.now

  static func path(_ adapter: ObjectPath, _ last: UInt8) -> ObjectPath {
    let digits = Array("0123456789ABCDEF")
    return ObjectPath(
      adapter.rawValue + "/dev_C0_FF_EE_00_00_" + String([digits[Int(last >> 4)], digits[Int(last & 0xF)]]))
  }

  static func address(_ last: UInt8) -> BluetoothAddress {
    BluetoothAddress(bytes: [0xC0, 0xFF, 0xEE, 0, 0, last])!
  }

  static func at(_ seconds: Int) -> ContinuousClock.Instant { start + .seconds(seconds) }

  /// A mirror with devices 1…`count` on `adapter`, device N first heard at second N.
  static func mirror(_ count: UInt8, on adapter: ObjectPath = hci0, paired: Set<UInt8> = []) -> DeviceMirror {
    var mirror = DeviceMirror()
    for last in 1...count {
      var properties: ObjectTree.Properties = ["RSSI": .int16(-60)]
      if paired.contains(last) { properties["Paired"] = .bool(true) }
      _ = mirror.added(path(adapter, last), properties, at: at(Int(last)))
    }
    return mirror
  }

  @Test func sightsOnlyTheChosenAdaptersDevices() throws {
    var mirror = DeviceMirror()
    // Before an adapter is chosen, devices are mirrored but not sighted.
    #expect(mirror.added(Self.path(Self.hci0, 1), ["RSSI": .int16(-60)], at: Self.at(0)) == nil)
    #expect(mirror.count == 1)

    mirror.adapter = Self.hci0
    let sighted = mirror.added(Self.path(Self.hci0, 2), ["RSSI": .int16(-50)], at: Self.at(1))
    let sighting = try #require(sighted)
    #expect(sighting.address == Self.address(2))
    #expect(sighting.rssi == -50)
    #expect(mirror.added(Self.path(Self.hci1, 3), ["RSSI": .int16(-50)], at: Self.at(1)) == nil)

    // The fast path: an update for hci0's device is a sighting; the same for hci1's is not.
    let update = DeviceUpdate(key: DeviceKey(path: Self.path(Self.hci0, 1))!, rssi: -42)
    #expect(mirror.apply(update, at: Self.at(2))?.rssi == -42)
    let other = DeviceUpdate(key: DeviceKey(path: Self.path(Self.hci1, 3))!, rssi: -42)
    #expect(mirror.apply(other, at: Self.at(2)) == nil)
    #expect(mirror[other.key]?.rssi == -42)  // mirrored all the same

    // A generic change is a sighting only when an advertisement property changed.
    #expect(
      mirror.changed(Self.path(Self.hci0, 2), ["Connected": .bool(true)], invalidated: [], at: Self.at(3))
        == nil)
    #expect(
      mirror.changed(Self.path(Self.hci0, 2), ["TxPower": .int16(4)], invalidated: [], at: Self.at(3))?
        .txPower == 4)

    // Removal reports lost only for the chosen adapter's devices.
    #expect(mirror.removed(Self.path(Self.hci1, 3)) == nil)
    #expect(mirror.removed(Self.path(Self.hci0, 2)) == Self.address(2))
    #expect(mirror.removed(Self.path(Self.hci0, 2)) == nil)
    #expect(mirror.count == 1)
  }

  @Test func evictionForgetsTheLeastRecentlyHeardAndKeepsBondedAndKept() throws {
    // 12 devices heard at seconds 1…12; 1 and 2 paired, 3 kept by the consumer.
    var mirror = Self.mirror(12, paired: [1, 2])
    let keep: (BluetoothAddress) -> Bool = { $0 == Self.address(3) }
    #expect(mirror.evict(over: 12, keep: keep) == nil)
    #expect(mirror.count == 12)

    // Over 10 by 2, plus a tenth of 10: three go, oldest first, skipping 1, 2 and 3.
    let evicted = mirror.evict(over: 10, keep: keep)
    let forgotten = try #require(evicted)
    #expect(forgotten == [Self.address(4), Self.address(5), Self.address(6)])
    #expect(mirror.count == 9)
    for last: UInt8 in [1, 2, 3, 7, 12] {
      #expect(mirror.key(for: Self.path(Self.hci0, last)) != nil, "device \(last)")
    }

    // Hearing device 7 again makes it the most recent: 8 and 9 go before it.
    mirror.adapter = Self.hci0
    _ = mirror.apply(DeviceUpdate(key: DeviceKey(path: Self.path(Self.hci0, 7))!, rssi: -40), at: Self.at(20))
    #expect(mirror.evict(over: 7, keep: keep) == [Self.address(8), Self.address(9)])
  }

  @Test func evictionNeverForgetsBondedDevicesEvenOverTheCap() {
    var mirror = Self.mirror(4, paired: [1, 2, 3, 4])
    #expect(mirror.evict(over: 2, keep: { _ in false }) == [])
    #expect(mirror.count == 4)
  }

  /// A fast-decoded update of a device the mirror does not have mirrors it under BlueZ's path,
  /// spelled from its key: the path RemoveDevice is then called with.
  @Test func aDeviceFirstHeardByItsUpdateHasBlueZsPath() throws {
    var mirror = DeviceMirror()
    mirror.adapter = Self.hci0
    let devices: [(path: ObjectPath, address: String)] = [
      (Self.path(Self.hci0, 0xAF), "C0:FF:EE:00:00:AF"),
      ("/org/bluez/hci0/dev_00_1A_2B_3C_4D_5E", "00:1A:2B:3C:4D:5E"),
      ("/org/bluez/hci12/dev_FF_FF_FF_FF_FF_FF", "FF:FF:FF:FF:FF:FF"),
      ("/org/bluez/hci9999/dev_C0_FF_EE_00_00_01", "C0:FF:EE:00:00:01"),
    ]
    for (path, address) in devices {
      let key = try #require(DeviceKey(path: path))
      #expect(key.path == path)
      _ = mirror.apply(DeviceUpdate(key: key, rssi: -42), at: Self.at(0))
      #expect(mirror[key]?.path == path)
      #expect(mirror[key]?.address == BluetoothAddress(address))
    }
    let stale = mirror.stale(of: Self.hci0, heardBefore: Self.at(1), keep: { _ in false }, limit: 10)
    #expect(stale.map(\.path) == [devices[1].path, devices[0].path])
  }

  @Test func staleSelectionHonoursTheCutoffBondsKeepsAndAdapter() {
    var mirror = Self.mirror(6, paired: [2])
    _ = mirror.added(Self.path(Self.hci1, 9), ["RSSI": .int16(-60)], at: Self.at(0))
    let keep: (BluetoothAddress) -> Bool = { $0 == Self.address(3) }

    // Heard before second 5: 1…4 on hci0 (hci1's 9 is another adapter's); 2 is paired, 3 kept.
    let stale = mirror.stale(of: Self.hci0, heardBefore: Self.at(5), keep: keep, limit: 10)
    #expect(stale.map(\.path) == [Self.path(Self.hci0, 1), Self.path(Self.hci0, 4)])
    // The cutoff is strict: device 5 was heard exactly at it.
    #expect(!stale.map(\.path).contains(Self.path(Self.hci0, 5)))
    #expect(mirror.stale(of: Self.hci0, heardBefore: Self.at(5), keep: keep, limit: 1).count == 1)

    // Asked once, not asked again until heard again.
    mirror.removalAsked(stale[0].key)
    #expect(
      mirror.stale(of: Self.hci0, heardBefore: Self.at(5), keep: keep, limit: 10).map(\.path) == [
        Self.path(Self.hci0, 4)
      ])
    mirror.adapter = Self.hci0
    _ = mirror.found(Self.path(Self.hci0, 1), at: Self.at(2))
    #expect(
      mirror.stale(of: Self.hci0, heardBefore: Self.at(5), keep: keep, limit: 10).map(\.path)
        == [Self.path(Self.hci0, 1), Self.path(Self.hci0, 4)])
  }

  @Test func removingAnAdapterForgetsItsDevicesOnly() {
    var mirror = Self.mirror(3)
    _ = mirror.added(Self.path(Self.hci1, 9), ["RSSI": .int16(-60)], at: Self.at(0))
    #expect(mirror.removeDevices(of: Self.hci0) == [Self.address(1), Self.address(2), Self.address(3)])
    #expect(mirror.count == 1)
    #expect(mirror.key(for: Self.path(Self.hci1, 9)) != nil)
    #expect(mirror.removeDevices(of: Self.hci0) == [])
  }

  @Test func reseedReportsTheAdaptersVanishedDevices() {
    var mirror = Self.mirror(3)
    _ = mirror.added(Self.path(Self.hci1, 9), ["RSSI": .int16(-60)], at: Self.at(0))
    // BlueZ came back with device 2 of hci0 only (and none of hci1).
    var tree = ObjectTree(
      managedObjects: .dictionary(
        key: "o", value: "a{sa{sv}}",
        [
          .init(
            .objectPath(Self.path(Self.hci0, 2)),
            .dictionary(
              key: "s", value: "a{sv}",
              [
                .init(
                  .string("org.bluez.Device1"),
                  .stringVariantDictionary(["Address": "C0:FF:EE:00:00:02", "RSSI": .int16(-70)]))
              ]))
        ]))
    #expect(
      mirror.reseed(from: &tree, at: Self.at(30), lostOf: Self.hci0) == [Self.address(1), Self.address(3)])
    #expect(mirror.count == 1)
    #expect(tree.objects.isEmpty)  // the Device1 objects moved into the mirror
  }

  @Test func monitorCallsUseTheMirrorOrThePath() {
    var mirror = Self.mirror(1)
    #expect(mirror.found(Self.path(Self.hci0, 1), at: Self.at(5))?.address == Self.address(1))
    #expect(mirror.found(Self.path(Self.hci0, 7), at: Self.at(5)) == nil)  // not mirrored
    #expect(mirror.address(of: Self.path(Self.hci0, 7)) == Self.address(7))
    #expect(mirror.address(of: Self.hci0) == nil)
  }

  /// The mirror's own table (`BeaconIndex` over parallel arrays, swap-removal) agrees with a
  /// dictionary through random adds, updates, removals, evictions and an adapter's removal: every
  /// device it should have is found with its last RSSI, and no other.
  @Test func theMirrorAgreesWithADictionaryThroughChurn() throws {
    var random = SystemRandomNumberGenerator()
    var mirror = DeviceMirror()
    mirror.adapter = Self.hci0
    var model: [DeviceKey: Int16] = [:]
    let adapters = [Self.hci0, Self.hci1]
    for step in 0..<3_000 {
      let adapter = adapters[Int.random(in: 0..<2, using: &random)]
      let last = UInt8.random(in: 0...255, using: &random)
      let path = Self.path(adapter, last)
      let key = try #require(DeviceKey(path: path))
      let rssi = Int16.random(in: -100 ... -30, using: &random)
      switch Int.random(in: 0..<10, using: &random) {
      case 0..<4:
        _ = mirror.added(path, ["RSSI": .int16(rssi)], at: Self.at(step))
        model[key] = rssi
      case 4..<7:
        _ = mirror.apply(DeviceUpdate(key: key, rssi: rssi), at: Self.at(step))
        model[key] = rssi
      case 7..<9:
        _ = mirror.removed(path)
        model[key] = nil
      default:
        if step % 500 == 0 {
          // A removed adapter takes its devices with it.
          let gone = mirror.removeDevices(of: Self.hci1)
          #expect(gone.count == model.keys.filter { $0.adapter == 1 }.count)
          model = model.filter { $0.key.adapter != 1 }
        } else if let forgotten = mirror.evict(over: 300, keep: { _ in false }) {
          // Eviction picks by last heard, over both adapters: whatever it forgot is gone.
          let before = model.count
          model = model.filter { mirror[$0.key] != nil }
          #expect(before - model.count == forgotten.count)
          #expect(mirror.count <= 300)
        }
      }
      #expect(mirror.count == model.count)
      #expect(mirror[key]?.rssi == model[key].map { Int($0) })
    }
    #expect(mirror.devices.mapValues { $0.rssi ?? 0 } == model.mapValues { Int($0) })
  }
}

extension DeviceMirror {
  /// The generic path's door, as `DiscoverySession` opens it: the properties read by the one
  /// Device1 reader (`DeviceChanges.init(_:)`).
  mutating func added(_ path: ObjectPath, _ properties: ObjectTree.Properties, at now: Instant)
    -> Advertisement?
  {
    added(path, DeviceChanges(properties), at: now)
  }

  mutating func changed(
    _ path: ObjectPath, _ properties: ObjectTree.Properties, invalidated: [String], at now: Instant
  ) -> Advertisement? {
    changed(path, DeviceChanges(properties), invalidated: invalidated, at: now)
  }
}
