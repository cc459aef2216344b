import BeaconCore
import DBus
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A Device1 PropertiesChanged that carries advertisement data only (RSSI, TxPower,
/// ManufacturerData as `a{qv}` of `ay`), read straight from the message on the D-Bus reader
/// thread. It is the signal BlueZ sends for every advertisement, so it skips the generic
/// `DBusValue` tree: names are compared as bytes, and manufacturer data equal to what the device
/// sent last is handed on without allocating (`RecentManufacturerData`). `DeviceDecoder` reads it.
///
/// Anything else (another property, another type, invalidated properties) is declined and takes
/// the generic path, which also logs malformed values.
package struct DeviceUpdate: Sendable, Equatable {
  var key: DeviceKey
  package var rssi: Int16?
  var txPower: Int16?
  /// nil when the change did not carry ManufacturerData; sorted by company, like the generic path.
  package var manufacturerData: [ManufacturerData]?
}

/// The Device1 fast decoder of one scan, with what it remembers (the last message and the last
/// manufacturer data of each device) and what it counts. One per session: a second scan in the
/// same process starts with nothing remembered, and its counts are its own.
package final class DeviceDecoder: Sendable {
  typealias Name = BlueZ.Wire
  /// The last message decoded per device, to decode its repeats by comparison; nil: every
  /// message is decoded in full (tests compare the two).
  let repeats: RepeatedUpdates?
  /// The last single-company manufacturer data decoded per device.
  let recent = RecentManufacturerData()
  /// ManufacturerData entries read past `DeviceEntries.limit` companies, not kept.
  let overLimit: EventCount

  package convenience init() { self.init(repeats: RepeatedUpdates()) }

  init(repeats: RepeatedUpdates?, overLimit: EventCount = EventCount()) {
    self.repeats = repeats
    self.overLimit = overLimit
  }

  /// The update `signal` carries, or nil when it is not one the fast path reads (the generic
  /// path then reads it).
  package func decode(_ signal: borrowing WireSignal) -> DeviceUpdate? {
    let withInvalidated = signal.signature(is: Name.withInvalidated)
    guard signal.member(is: Name.propertiesChanged), signal.interface(is: Name.propertiesInterface),
      withInvalidated || signal.signature(is: Name.withoutInvalidated),
      let path = signal.withPath({ $0.bytes })
    else { return nil }
    // From here on, what the decoder reads is the path, the byte order and the body: a message
    // equal to the one `repeats` remembers for this path in those (but for the RSSI) decodes as
    // that one did.
    var body = signal.body
    let bodyStart = body.position
    // Both valid for as long as the signal is.
    let (bodyBytes, bigEndian) = signal.withBytes {
      (UnsafeRawBufferPointer(rebasing: $0[bodyStart...]), $0.load(as: UInt8.self) == UInt8(ascii: "B"))
    }
    let shape = RepeatedUpdates.Shape(
      pathCount: path.count, bodyCount: bodyBytes.count, bigEndian: bigEndian,
      withInvalidated: withInvalidated)
    let slot = repeats == nil ? nil : RepeatedUpdates.slot(path)
    if let repeats, let slot, let again = repeats.update(path: path, body: bodyBytes, shape, slot: slot) {
      return again
    }
    guard let key = signal.withPath(DeviceKey.init) else { return nil }
    guard body.string()?.equals(Name.deviceInterface) == true,
      let end = body.beginArray(elementAlignment: 8)
    else { return nil }
    var read = UpdateSink(decoder: self, key: key)
    guard case .read = DevicePropertyReader.read(&body, end: end, into: &read), body.position == end else {
      return nil
    }
    // Invalidated properties (`as`) must be absent or empty.
    if withInvalidated {
      guard let invalidatedEnd = body.beginArray(elementAlignment: 4), invalidatedEnd == body.position else {
        return nil
      }
    }
    let update = read.update
    guard update.rssi != nil || update.txPower != nil || update.manufacturerData != nil else { return nil }
    if let repeats, let slot, update.rssi != nil {
      repeats.remember(
        path: path, body: bodyBytes, shape, slot: slot, rssiOffset: read.rssiOffset - bodyStart, update)
    }
    return update
  }
}

/// What `DevicePropertyReader` reads for the fast decoder: RSSI, TxPower and ManufacturerData in
/// BlueZ's types, into an update. A beacon sends the same bytes in every advertisement, so one
/// company whose bytes equal what the device sent last time gives back that same array
/// (`RecentManufacturerData`): no allocation, and the mirror's record keeps the storage it
/// already holds.
private struct UpdateSink: DevicePropertySink {
  /// Not retained: the sink lives within one `decode` of this decoder.
  unowned(unsafe) let decoder: DeviceDecoder
  var update: DeviceUpdate
  /// Where the RSSI read last (the one that counts) starts in the message.
  var rssiOffset = 0

  init(decoder: DeviceDecoder, key: DeviceKey) {
    self.decoder = decoder
    update = DeviceUpdate(key: key)
  }

  static var advertisementOnly: Bool { true }

  mutating func rssi(_ value: Int16, at offset: Int) {
    update.rssi = value
    rssiOffset = offset
  }

  mutating func txPower(_ value: Int16) { update.txPower = value }

  mutating func manufacturerData(company: UInt16, bytes: UnsafeRawBufferPointer) {
    if let same = decoder.recent.same(update.key, company: company, bytes: bytes) {
      update.manufacturerData = same
      return
    }
    let out = [ManufacturerData(companyID: company, data: Array(bytes))]
    decoder.recent.remember(update.key, out)
    update.manufacturerData = out
  }

  mutating func manufacturerData(_ entries: DeviceEntries<UInt16>) {
    if entries.excess > 0 { decoder.overLimit.add(entries.excess) }
    update.manufacturerData = entries.manufacturerData
  }
}

/// The last Device1 PropertiesChanged with an RSSI that each device sent, as the bytes the
/// decoder reads (its path and its body), and what it decoded to. BlueZ sends a beacon's every
/// advertisement as the same message but for its serial and its RSSI. A message whose names
/// `decode` has checked, and whose byte order, path and body equal the ones remembered for its
/// slot but for the RSSI, decodes to what that one did with the new RSSI: the path and the
/// manufacturer data are not read again. Any other difference, or another device in
/// the slot, decodes in full. Neither the header's other fields (serial, sender) nor its names
/// are kept: `decode` does not read the former, and checks the latter against constants.
///
/// Direct-mapped by the path's last eight bytes (the low half of the device's address): `slots`
/// entries of at most `slotBytes` bytes of path and body (a BlueZ advertisement has about 160),
/// in one buffer whose pages are only touched as slots are used; longer ones are not
/// remembered. One per `DeviceDecoder`; behind a lock, like `RecentManufacturerData`, because
/// the class is handed to the reader thread.
final class RepeatedUpdates: Sendable {
  static let slots = 512
  static let slotBytes = 256

  /// What, besides the bytes, two messages must share to decode alike.
  struct Shape: Equatable {
    var pathCount: Int32
    var bodyCount: Int32
    var bigEndian: Bool
    /// `sa{sv}as` rather than `sa{sv}`: the body's end is read differently.
    var withInvalidated: Bool

    init(pathCount: Int, bodyCount: Int, bigEndian: Bool, withInvalidated: Bool) {
      self.pathCount = Int32(truncatingIfNeeded: pathCount)
      self.bodyCount = Int32(truncatingIfNeeded: bodyCount)
      self.bigEndian = bigEndian
      self.withInvalidated = withInvalidated
    }
  }

  /// `@unchecked Sendable`: its buffer is only touched under the lock.
  private struct Table: ~Copyable, @unchecked Sendable {
    let bytes = UnsafeMutableRawPointer.allocate(byteCount: slots * slotBytes, alignment: 64)
    /// Per slot: the remembered message's shape (nil: none) and where in its body its RSSI (an
    /// `n`, two bytes) starts. Apart from the updates, so that a comparison retains nothing.
    var shapes = [(shape: Shape, rssiOffset: Int)?](repeating: nil, count: slots)
    var updates = [DeviceUpdate?](repeating: nil, count: slots)
    deinit { bytes.deallocate() }
  }

  private let table = Mutex(Table())

  /// The slot for the device at `path`, from its last eight bytes.
  static func slot(_ path: UnsafeRawBufferPointer) -> Int? {
    guard path.count >= 8 else { return nil }
    let tail = path.baseAddress!.loadUnaligned(fromByteOffset: path.count - 8, as: UInt64.self)
    return Int(truncatingIfNeeded: ((tail ^ UInt64(path.count)) &* 0x9E37_79B9_7F4A_7C15) >> 55)  // 9 bits
  }

  /// What a message decodes to, when the one remembered in `slot` has its `shape`, its `path`
  /// and its `body` but for the RSSI.
  func update(path: UnsafeRawBufferPointer, body bytes: UnsafeRawBufferPointer, _ shape: Shape, slot: Int)
    -> DeviceUpdate?
  {
    table.withLock { table -> DeviceUpdate? in
      guard let (remembered, rssi) = table.shapes[slot], remembered == shape else { return nil }
      let pathCount = path.count
      let bodyCount = bytes.count
      let body = bytes.baseAddress!
      let old = table.bytes + slot * Self.slotBytes
      // The RSSI is copied over the remembered one first, so that one comparison covers every
      // other byte of the body. What it held before is never compared.
      (old + pathCount + rssi).copyMemory(from: body + rssi, byteCount: 2)
      guard let update = table.updates[slot], memcmp(old + pathCount, body, bodyCount) == 0,
        memcmp(old, path.baseAddress!, pathCount) == 0
      else { return nil }
      let raw = body.loadUnaligned(fromByteOffset: rssi, as: UInt16.self)
      var again = update
      again.rssi = Int16(bitPattern: shape.bigEndian ? UInt16(bigEndian: raw) : UInt16(littleEndian: raw))
      return again
    }
  }

  /// Remembers a message of `shape`, `path` and `body`, which decoded to `update` with its RSSI
  /// at `rssiOffset` in the body, in `slot`.
  func remember(
    path: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, _ shape: Shape, slot: Int, rssiOffset: Int,
    _ update: DeviceUpdate
  ) {
    guard path.count + body.count <= Self.slotBytes, rssiOffset >= 0, rssiOffset + 2 <= body.count,
      !path.isEmpty, !body.isEmpty
    else { return }
    table.withLock { table in
      let old = table.bytes + slot * Self.slotBytes
      old.copyMemory(from: path.baseAddress!, byteCount: path.count)
      (old + path.count).copyMemory(from: body.baseAddress!, byteCount: body.count)
      table.shapes[slot] = (shape, rssiOffset)
      table.updates[slot] = update
    }
  }
}

/// The last single-company ManufacturerData each device sent, so that an unchanged one is handed
/// on as the same array. A direct-mapped table of `slots` entries indexed by the device's
/// address (no `Hasher`): two devices sharing a slot only cost an allocation when they alternate,
/// which is what every device cost without it, and a flood of random addresses cannot grow it.
/// One per `DeviceDecoder`, behind a lock: the decoder runs on a D-Bus reader thread.
final class RecentManufacturerData: Sendable {
  static let slots = 1_024
  private let table = Mutex<[(key: DeviceKey, data: [ManufacturerData])?]>(
    Array(repeating: nil, count: slots))

  private static func slot(_ device: DeviceKey) -> Int {
    let mixed = (device.address.uint48 ^ device.adapter &<< 48) &* 0x9E37_79B9_7F4A_7C15
    return Int(truncatingIfNeeded: mixed >> 54)  // 10 bits: `slots`
  }

  /// The array remembered for `device` when it holds exactly `company` with `bytes`.
  func same(_ device: DeviceKey, company: UInt16, bytes: UnsafeRawBufferPointer) -> [ManufacturerData]? {
    let slot = Self.slot(device)
    return table.withLock { table -> [ManufacturerData]? in
      guard let entry = table[slot], entry.key == device, entry.data.count == 1,
        entry.data[0].companyID == company, entry.data[0].data.count == bytes.count,
        bytes.isEmpty
          || entry.data[0].data.withUnsafeBytes({
            memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0
          })
      else { return nil }
      return entry.data
    }
  }

  func remember(_ device: DeviceKey, _ data: [ManufacturerData]) {
    let slot = Self.slot(device)
    table.withLock { $0[slot] = (device, data) }
  }
}
