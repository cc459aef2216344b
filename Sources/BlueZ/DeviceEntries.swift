import BeaconCore

/// A Device1 dictionary property (ManufacturerData by company, ServiceData by UUID) as the scan
/// keeps it: at most `limit` keys, a repeated key keeping its last value (BlueZ's dictionaries
/// never repeat one; a broken or hostile peer's might), sorted by key. Every reader of these
/// properties (the fast decoder, `GetManagedObjects`, the generic path) builds them here, so
/// that all three agree entry for entry.
///
/// Linear in the entries read: each is looked up among at most `limit` kept keys, so a message
/// carrying tens of thousands of entries costs their reading and nothing quadratic. Entries of
/// keys past the limit are counted in `excess`, not kept.
struct DeviceEntries<Key: Equatable> {
  /// The most keys kept per device. A legacy advertisement and its scan response hold at most
  /// 15 ManufacturerData structures (62 bytes, 4 at least each, Core 5.3 Vol 3 Part C §11);
  /// 32 leaves room for extended advertising and for what BlueZ accumulates across
  /// advertisements.
  static var limit: Int { 32 }

  private(set) var entries: [(key: Key, data: [UInt8])] = []
  /// Entries read whose key was not kept (the limit was reached).
  private(set) var excess = 0

  init() {}

  /// Whether `key` is kept (already, or now as a new key while under the limit). Read the value
  /// only when it is: an entry over the limit costs no allocation.
  mutating func admit(_ key: Key) -> Int? {
    if let index = entries.firstIndex(where: { $0.key == key }) { return index }
    guard entries.count < Self.limit else {
      excess += 1
      return nil
    }
    entries.append((key, []))
    return entries.count - 1
  }

  mutating func set(_ data: [UInt8], at index: Int) { entries[index].data = data }

  /// Adds one entry (`admit`, then `set`).
  mutating func add(_ key: Key, _ data: [UInt8]) {
    if let index = admit(key) { set(data, at: index) }
  }

  /// The kept entries, sorted by key (`areInIncreasingOrder`).
  func sorted<Entry>(by areInIncreasingOrder: (Key, Key) -> Bool, _ make: (Key, [UInt8]) -> Entry) -> [Entry]
  {
    entries.sorted { areInIncreasingOrder($0.key, $1.key) }.map { make($0.key, $0.data) }
  }
}

extension DeviceEntries<UInt16> {
  /// Sorted by company, as every reader hands ManufacturerData on.
  var manufacturerData: [ManufacturerData] { sorted(by: <) { ManufacturerData(companyID: $0, data: $1) } }
}

extension DeviceEntries<ServiceUUID> {
  /// Sorted by the UUID's text, as every reader hands ServiceData on.
  var serviceData: [ServiceData] {
    sorted(by: { $0.description < $1.description }) { ServiceData(uuid: $0, data: $1) }
  }
}
