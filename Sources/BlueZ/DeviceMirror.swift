import BeaconCore
import DBus

/// The scan's copy of BlueZ's Device1 objects, as typed records keyed by adapter and address, and
/// the rules over them: which change is a sighting (a device of the chosen adapter whose
/// advertisement changed), which devices are evicted past the cap, which are stale enough to
/// remove from BlueZ. Pure: the caller (`DiscoverySession`) brings the signals, the time and the
/// calls. `package` for what DBusPathBench drives (`--devices`): the mirror's cost as the
/// number of devices grows.
package struct DeviceMirror: Sendable {
  package typealias Instant = ContinuousClock.Instant

  /// Device `i` is `keys[i]` with `records[i]`; `slots` finds `i` by a seeded 64-bit form of the
  /// key (`BeaconIndex`, as presence files beacons). A `Dictionary` ran `Hasher` for every
  /// update, about 250 instructions of an advertisement's path (callgrind).
  private var keys: [DeviceKey] = []
  private var records: [DeviceRecord] = []
  private var slots = BeaconIndex()
  /// When the mirror has shrunk enough to copy it into smaller tables.
  private var shrink = PeakShrink()

  /// The adapter the scan runs on: only its devices are sighted or reported lost.
  package var adapter: ObjectPath? {
    didSet { adapterID = adapter.map(DeviceKey.adapter) }
  }
  /// `adapter` as `DeviceKey` names it.
  private var adapterID: UInt64?

  package init() {}

  package var count: Int { keys.count }

  subscript(key: DeviceKey) -> DeviceRecord? { position(of: key).map { records[$0] } }

  /// Every device, by key (for tests and checks; not on the scan's path).
  var devices: [DeviceKey: DeviceRecord] { Dictionary(uniqueKeysWithValues: zip(keys, records)) }

  // MARK: Storage

  private func position(of key: DeviceKey) -> Int? {
    slots.find(key.indexKey(seed: slots.seed)) { keys[$0] == key }
  }

  /// Adds a device the mirror does not have; its position.
  @discardableResult
  private mutating func insert(_ key: DeviceKey, _ record: DeviceRecord) -> Int {
    keys.append(key)
    records.append(record)
    slots.insert(key.indexKey(seed: slots.seed), index: keys.count - 1)
    return keys.count - 1
  }

  /// Forgets the device at `position` (the last one takes its place); its record.
  @discardableResult
  private mutating func remove(at position: Int) -> DeviceRecord {
    slots.remove(keys[position].indexKey(seed: slots.seed), index: position)
    let last = keys.count - 1
    if position != last {
      keys.swapAt(position, last)
      records.swapAt(position, last)
      slots.move(keys[position].indexKey(seed: slots.seed), from: last, to: position)
    }
    keys.removeLast()
    return records.removeLast()
  }

  /// Replaces every device with `devices`, in tables sized for them.
  private mutating func replace(with devices: some Sequence<(DeviceKey, DeviceRecord)>) {
    keys = []
    records = []
    keys.reserveCapacity(devices.underestimatedCount)
    records.reserveCapacity(devices.underestimatedCount)
    for (key, record) in devices {
      keys.append(key)
      records.append(record)
    }
    let seed = slots.seed
    slots = slots.rebuilt(keys.map { $0.indexKey(seed: seed) })
  }

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
      for (key, record) in zip(keys, records).sorted(by: { $0.1.path < $1.1.path })
      where ObjectTree.device(record.path, isOf: adapter) && fresh[key] == nil {
        lost.append(record.address)
      }
    }
    replace(with: fresh.lazy.map { ($0.key, $0.value) })
    return lost
  }

  // MARK: Signals

  /// The mirror's key for a device path: from the path itself, or (for a path that names no
  /// address) by looking for it.
  func key(for path: ObjectPath) -> DeviceKey? {
    if let key = DeviceKey(path: path) { return position(of: key) != nil ? key : nil }
    // Only a path that names no address (never one of BlueZ's) costs a search.
    return records.firstIndex { $0.path == path }.map { keys[$0] }
  }

  /// InterfacesAdded of a Device1: mirrors it (or updates it); a sighting if it is the adapter's.
  mutating func added(_ path: ObjectPath, _ changes: DeviceChanges, at now: Instant) -> Advertisement? {
    var mirrored = key(for: path).flatMap(position(of:))
    if let position = mirrored {
      records[position].apply(changes, invalidated: [])
    } else if let record = DeviceRecord(path: path, changes: changes, at: now) {
      mirrored = insert(DeviceKey(path: path, address: record.address), record)
    }
    guard let position = mirrored, let adapter, ObjectTree.device(path, isOf: adapter) else { return nil }
    records[position].lastHeard = now
    return records[position].advertisement
  }

  /// InterfacesRemoved of a Device1: forgets it; its address if it was the adapter's (lost).
  mutating func removed(_ path: ObjectPath) -> BluetoothAddress? {
    guard let position = key(for: path).flatMap(position(of:)) else { return nil }
    let device = remove(at: position)
    guard let adapter, ObjectTree.device(path, isOf: adapter) else { return nil }
    return device.address
  }

  /// Forgets every device of an adapter that went away (BlueZ may not remove them first:
  /// python-dbusmock's RemoveAdapter does not). Their addresses, sorted by path.
  mutating func removeDevices(of adapter: ObjectPath) -> [BluetoothAddress] {
    let gone = records.filter { ObjectTree.device($0.path, isOf: adapter) }.sorted { $0.path < $1.path }
    if gone.isEmpty { return [] }
    replace(
      with: zip(keys, records).lazy.filter { !ObjectTree.device($0.1.path, isOf: adapter) }.map { ($0, $1) })
    return gone.map(\.address)
  }

  /// A generic Device1 PropertiesChanged: a sighting when an advertisement property changed.
  mutating func changed(
    _ path: ObjectPath, _ changes: DeviceChanges, invalidated: [String], at now: Instant
  ) -> Advertisement? {
    let key: DeviceKey
    if let mirrored = self.key(for: path) {
      key = mirrored
    } else {
      guard let record = DeviceRecord(path: path, changes: DeviceChanges(), at: now) else { return nil }
      key = DeviceKey(path: path, address: record.address)
      insert(key, record)
    }
    return change(key, at: now) { record in
      record.apply(changes, invalidated: invalidated)
      return changes.advertises
    }
  }

  /// A fast-decoded Device1 PropertiesChanged (RSSI, TxPower, ManufacturerData): always a
  /// sighting when the device is the adapter's. One hash lookup.
  package mutating func apply(_ update: DeviceUpdate, at now: Instant) -> Advertisement? {
    change(update.key, at: now) { record in
      record.apply(update)
      return true
    }
  }

  /// Applies a change to a device (mirroring it, by its key alone, if it is new) and returns its
  /// advertisement when `change` says the advertisement changed and the device is on the adapter.
  /// One lookup.
  private mutating func change(
    _ key: DeviceKey, at now: Instant, _ change: (inout DeviceRecord) -> Bool
  ) -> Advertisement? {
    var index = position(of: key)
    if index == nil {
      guard let record = DeviceRecord(key, at: now) else { return nil }
      index = insert(key, record)
    }
    guard let index else { return nil }
    let onAdapter = adapterID != nil && key.adapter == adapterID
    // In place: reading `records[index].advertisement` copied the whole record first (a retain
    // and a release per field, callgrind).
    return Self.inPlace(&records[index]) { record -> Advertisement? in
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
    guard let position = key(for: path).flatMap(position(of:)) else { return nil }
    records[position].lastHeard = now
    return records[position].advertisement
  }

  /// The address of a device path: the mirrored record's, else the one the path names.
  func address(of path: ObjectPath) -> BluetoothAddress? {
    key(for: path).flatMap(position(of:)).map { records[$0].address }
      ?? DeviceAdvertisement.address(path: path)
  }

  // MARK: Bounds

  /// How many devices an eviction leaves: a tenth of the cap under it, so that a flood evicts
  /// once per tenth of the cap's new devices, not once per device.
  package static func afterEviction(_ maxDevices: Int) -> Int { maxDevices - maxDevices / 10 }

  /// Keeps the mirror under `maxDevices`: past it, the least recently heard tenth of the devices
  /// that are neither bonded nor kept is forgotten. Returns their addresses, or nil when the mirror
  /// was not over (the scan reports them lost; BlueZ drops them itself after its
  /// TemporaryTimeout, and a device heard again is mirrored again). Sorting a tenth at a time keeps
  /// a flood of random addresses at O(log n) per device. Once the mirror has shrunk to a quarter
  /// of its peak, it is copied into a smaller table (the daemon hands the freed pages back to the
  /// system).
  package mutating func evict(over maxDevices: Int, keep: (BluetoothAddress) -> Bool) -> [BluetoothAddress]? {
    var forgotten: [BluetoothAddress]?
    if keys.count > maxDevices {
      let excess = keys.count - Self.afterEviction(maxDevices)
      // Sorted as (when heard, position) pairs, oldest first, each record read in place (through
      // the buffer: `records[i].bonded` copied the record, a retain and a release of each of its
      // fields) and its time as a `Duration` since the first record's (comparing `Instant`s goes
      // through the clock's witnesses). Sorting the positions by `records[i].lastHeard` cost
      // about 12,000 instructions per device evicted (callgrind).
      var candidates: [(heard: Duration, position: Int)] = []
      candidates.reserveCapacity(records.count)
      records.withUnsafeBufferPointer { records in
        let reference = records[0].lastHeard
        for position in records.indices where !records[position].bonded && !keep(records[position].address) {
          candidates.append((records[position].lastHeard - reference, position))
        }
      }
      let chosen = candidates.sorted { $0 < $1 }.prefix(excess).map(\.position)
      forgotten = chosen.map { records[$0].address }
      // In place, from the highest position down: a swap-removal then only ever moves a device
      // that stays. Rebuilding the tables instead cost a megabyte of fresh arrays per round of a
      // flood, and left the heap fragmented after it.
      for position in chosen.sorted(by: >) { remove(at: position) }
    }
    if shrink.shouldRelease(tracked: keys.count) {
      // Copies sized to fit: the old tables kept their peak's capacity.
      replace(with: Array(zip(keys, records)))
    }
    return forgotten
  }

  /// The devices of `adapter` to remove from BlueZ: not heard since `cutoff`, not asked for
  /// already, neither bonded nor kept. At most `limit`, sorted by path.
  func stale(
    of adapter: ObjectPath, heardBefore cutoff: Instant, keep: (BluetoothAddress) -> Bool, limit: Int
  ) -> [(key: DeviceKey, path: ObjectPath)] {
    zip(keys, records).filter { _, record in
      record.lastHeard < cutoff && !record.removalAsked && !record.bonded && !keep(record.address)
        && ObjectTree.device(record.path, isOf: adapter)
    }.sorted { $0.1.path < $1.1.path }.prefix(limit).map { (key: $0.0, path: $0.1.path) }
  }

  /// RemoveDevice was asked for it: not asked again until it is heard again (BlueZ's
  /// InterfacesRemoved, maybe still unread, reports it lost).
  mutating func removalAsked(_ key: DeviceKey) {
    if let position = position(of: key) { records[position].removalAsked = true }
  }
}

extension DeviceRecord {
  /// A device first heard in a fast-decoded update, which names it by its key alone: BlueZ's path
  /// for it (`DeviceKey.path`) and the key's address, not read back out of that path (past the
  /// cap every update is of such a device; parsing the path cost about 36,000 instructions each,
  /// callgrind). nil for an adapter not named `hciN`, whose device paths the key cannot spell.
  init?(_ key: DeviceKey, at time: ContinuousClock.Instant) {
    guard let path = key.path else { return nil }
    self.path = path
    address = key.address
    lastHeard = time
  }
}
