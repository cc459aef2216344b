import BeaconCore
import DBus

/// The scan's copy of BlueZ's Device1 objects, as typed records keyed by adapter and address, and
/// the rules over them: which change is a sighting (a device of the chosen adapter whose
/// advertisement changed), which devices are evicted past the cap, which are stale enough to
/// remove from BlueZ. Pure: the caller (`DiscoverySession`) brings the signals, the time and the
/// calls.
struct DeviceMirror: Sendable {
  typealias Instant = ContinuousClock.Instant

  private(set) var devices: [DeviceKey: DeviceRecord] = [:]
  /// When the mirror has shrunk enough to copy it into a smaller table.
  private var shrink = PeakShrink()

  /// The adapter the scan runs on: only its devices are sighted or reported lost.
  var adapter: ObjectPath? {
    didSet { adapterID = adapter.map(DeviceKey.adapter) }
  }
  /// `adapter` as `DeviceKey` names it.
  private var adapterID: UInt64?

  init() {}

  var count: Int { devices.count }

  subscript(key: DeviceKey) -> DeviceRecord? { devices[key] }

  // MARK: Seeding

  /// Replaces the devices with the Device1 objects of a fresh GetManagedObjects, taking them out
  /// of `tree`. Returns the addresses of `adapter`'s devices that are gone, sorted by path (those
  /// that vanished while bluetoothd was away).
  @discardableResult
  mutating func reseed(from tree: inout ObjectTree, at time: Instant, lostOf adapter: ObjectPath? = nil)
    -> [BluetoothAddress]
  {
    var fresh: [DeviceKey: DeviceRecord] = [:]
    for (path, properties) in tree.takeAll(BlueZ.deviceInterface) {
      guard let record = DeviceRecord(path: path, properties: properties, at: time) else { continue }
      fresh[DeviceKey(path: path, address: record.address)] = record
    }
    return reseed(with: fresh, lostOf: adapter)
  }

  /// Replaces the devices with `fresh` (read from a GetManagedObjects reply in place,
  /// `ManagedObjects`). Returns the addresses of `adapter`'s devices that are gone, sorted by path.
  @discardableResult
  mutating func reseed(with fresh: [DeviceKey: DeviceRecord], lostOf adapter: ObjectPath? = nil)
    -> [BluetoothAddress]
  {
    var lost: [BluetoothAddress] = []
    if let adapter {
      for (key, record) in devices.sorted(by: { $0.value.path < $1.value.path })
      where ObjectTree.device(record.path, isOf: adapter) && fresh[key] == nil {
        lost.append(record.address)
      }
    }
    devices = fresh
    return lost
  }

  // MARK: Signals

  /// The mirror's key for a device path: from the path itself, or (for a path that names no
  /// address) by looking for it.
  func key(for path: ObjectPath) -> DeviceKey? {
    if let key = DeviceKey(path: path) { return devices[key] != nil ? key : nil }
    // Only a path that names no address (never one of BlueZ's) costs a search.
    return devices.first { $0.value.path == path }?.key
  }

  /// InterfacesAdded of a Device1: mirrors it (or updates it); a sighting if it is the adapter's.
  mutating func added(_ path: ObjectPath, _ properties: ObjectTree.Properties, at now: Instant)
    -> Advertisement?
  {
    var mirrored = key(for: path)
    if let key = mirrored {
      devices[key]!.apply(properties, invalidated: [])
    } else if let record = DeviceRecord(path: path, properties: properties, at: now) {
      let key = DeviceKey(path: path, address: record.address)
      devices[key] = record
      mirrored = key
    }
    guard let key = mirrored, let adapter, ObjectTree.device(path, isOf: adapter) else { return nil }
    devices[key]!.lastHeard = now
    return devices[key]!.advertisement
  }

  /// InterfacesRemoved of a Device1: forgets it; its address if it was the adapter's (lost).
  mutating func removed(_ path: ObjectPath) -> BluetoothAddress? {
    guard let key = key(for: path), let device = devices.removeValue(forKey: key), let adapter,
      ObjectTree.device(path, isOf: adapter)
    else { return nil }
    return device.address
  }

  /// Forgets every device of an adapter that went away (BlueZ may not remove them first:
  /// python-dbusmock's RemoveAdapter does not). Their addresses, sorted by path.
  mutating func removeDevices(of adapter: ObjectPath) -> [BluetoothAddress] {
    let gone = devices.filter { ObjectTree.device($0.value.path, isOf: adapter) }
    var lost: [BluetoothAddress] = []
    for (key, record) in gone.sorted(by: { $0.value.path < $1.value.path }) {
      devices[key] = nil
      lost.append(record.address)
    }
    return lost
  }

  /// A generic Device1 PropertiesChanged: a sighting when an advertisement property changed.
  mutating func changed(
    _ path: ObjectPath, _ changes: ObjectTree.Properties, invalidated: [String], at now: Instant
  ) -> Advertisement? {
    let key: DeviceKey
    if let mirrored = self.key(for: path) {
      key = mirrored
    } else {
      guard let record = DeviceRecord(path: path, properties: [:], at: now) else { return nil }
      key = DeviceKey(path: path, address: record.address)
      devices[key] = record
    }
    return change(key, path: path, at: now) { record in
      record.apply(changes, invalidated: invalidated)
      return !BlueZ.Property.advertisementKeys.isDisjoint(with: changes.keys)
    }
  }

  /// A fast-decoded Device1 PropertiesChanged (RSSI, TxPower, ManufacturerData): always a
  /// sighting when the device is the adapter's. One hash lookup.
  mutating func apply(_ update: DeviceUpdate, at now: Instant) -> Advertisement? {
    change(update.key, path: nil, at: now) { record in
      record.apply(update)
      return true
    }
  }

  /// Applies a change to a device (mirroring it if it is new) and returns its advertisement when
  /// `change` says the advertisement changed and the device is on the adapter. One hash lookup.
  private mutating func change(
    _ key: DeviceKey, path: ObjectPath?, at now: Instant, _ change: (inout DeviceRecord) -> Bool
  ) -> Advertisement? {
    var index = devices.index(forKey: key)
    if index == nil {
      guard let path = path ?? key.path, let record = DeviceRecord(path: path, properties: [:], at: now)
      else {
        return nil
      }
      devices[key] = record
      index = devices.index(forKey: key)
    }
    guard let index else { return nil }
    let onAdapter = adapterID != nil && key.adapter == adapterID
    // In place: reading `devices.values[index].advertisement` copied the whole record first
    // (a retain and a release per field, callgrind).
    return Self.inPlace(&devices.values[index]) { record -> Advertisement? in
      guard change(&record), onAdapter else { return nil }
      record.lastHeard = now
      return record.advertisement
    }
  }

  private static func inPlace<T>(_ record: inout DeviceRecord, _ body: (inout DeviceRecord) -> T) -> T {
    body(&record)
  }

  // MARK: Monitor calls

  /// DeviceFound from our advertisement monitor: a sighting of a mirrored device.
  mutating func found(_ path: ObjectPath, at now: Instant) -> Advertisement? {
    guard let key = key(for: path), devices[key] != nil else { return nil }
    devices[key]!.lastHeard = now
    return devices[key]!.advertisement
  }

  /// The address of a device path: the mirrored record's, else the one the path names.
  func address(of path: ObjectPath) -> BluetoothAddress? {
    key(for: path).flatMap { devices[$0]?.address }
      ?? DeviceAdvertisement.address(path: path, properties: nil)
  }

  // MARK: Bounds

  /// Keeps the mirror under `maxDevices`: past it, the least recently heard tenth of the devices
  /// that are neither bonded nor kept is forgotten. Returns their addresses, or nil when the mirror
  /// was not over (the scan reports them lost; BlueZ drops them itself after its
  /// TemporaryTimeout, and a device heard again is mirrored again). Sorting a tenth at a time keeps
  /// a flood of random addresses at O(log n) per device. Once the mirror has shrunk to a quarter
  /// of its peak, it is copied into a smaller table (the daemon hands the freed pages back to the
  /// system).
  mutating func evict(over maxDevices: Int, keep: (BluetoothAddress) -> Bool) -> [BluetoothAddress]? {
    var forgotten: [BluetoothAddress]?
    if devices.count > maxDevices {
      let candidates = devices.filter { !$0.value.bonded && !keep($0.value.address) }
        .sorted { $0.value.lastHeard < $1.value.lastHeard }
      let excess = devices.count - maxDevices + maxDevices / 10
      forgotten = []
      for (key, record) in candidates.prefix(excess) {
        devices[key] = nil
        forgotten!.append(record.address)
      }
    }
    if shrink.shouldRelease(tracked: devices.count) {
      devices = Dictionary(uniqueKeysWithValues: devices.map { ($0.key, $0.value) })
    }
    return forgotten
  }

  /// The devices of `adapter` to remove from BlueZ: not heard since `cutoff`, not asked for
  /// already, neither bonded nor kept. At most `limit`, sorted by path.
  func stale(
    of adapter: ObjectPath, heardBefore cutoff: Instant, keep: (BluetoothAddress) -> Bool, limit: Int
  ) -> [(key: DeviceKey, path: ObjectPath)] {
    devices.filter { _, record in
      record.lastHeard < cutoff && !record.removalAsked && !record.bonded && !keep(record.address)
        && ObjectTree.device(record.path, isOf: adapter)
    }.sorted { $0.value.path < $1.value.path }.prefix(limit).map { ($0.key, $0.value.path) }
  }

  /// RemoveDevice was asked for it: not asked again until it is heard again (BlueZ's
  /// InterfacesRemoved, maybe still unread, reports it lost).
  mutating func removalAsked(_ key: DeviceKey) {
    devices[key]?.removalAsked = true
  }
}
