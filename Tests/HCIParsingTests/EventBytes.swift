import HCIParsing

/// Builds HCI event bytes by hand, field by field, as the Core Specification lays them out
/// (Vol 4, Part E, 7.7.65.2, 7.7.65.13). Independent of the parser under test.
enum EventBytes {
  struct Legacy {
    var eventType: UInt8 = 0x03  // ADV_NONCONN_IND
    var addressType: UInt8 = 0x01
    /// Most significant byte first, as printed.
    var address: [UInt8]
    var data: [UInt8]
    var rssi: UInt8
  }

  struct Extended {
    var eventType: UInt16 = 0x0000
    var addressType: UInt8 = 0x01
    var address: [UInt8]
    var sid: UInt8 = 0x01
    var txPower: UInt8 = 0x7F
    var rssi: UInt8
    var data: [UInt8]
  }

  static func event(_ code: UInt8, _ parameters: [UInt8]) -> [UInt8] {
    [code, UInt8(parameters.count)] + parameters
  }

  /// Report after report, as Linux reads them.
  static func legacy(_ reports: [Legacy]) -> [UInt8] {
    var p: [UInt8] = [0x02, UInt8(reports.count)]
    for r in reports {
      p += [r.eventType, r.addressType] + r.address.reversed() + [UInt8(r.data.count)] + r.data + [r.rssi]
    }
    return event(0x3E, p)
  }

  static func extended(_ reports: [Extended]) -> [UInt8] {
    var p: [UInt8] = [0x0D, UInt8(reports.count)]
    for r in reports {
      p += [UInt8(r.eventType & 0xFF), UInt8(r.eventType >> 8), r.addressType] + r.address.reversed()
      p += [0x01, 0x00, r.sid, r.txPower, r.rssi, 0x00, 0x00, 0x00] + [UInt8](repeating: 0, count: 6)
      p += [UInt8(r.data.count)] + r.data
    }
    return event(0x3E, p)
  }

  /// An iBeacon PDU's AD structures: flags, then Apple manufacturer data (0x004C, 0x02 0x15).
  static func iBeacon(uuid: [UInt8], major: UInt16, minor: UInt16, power: Int8 = -59) -> [UInt8] {
    [0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00, 0x02, 0x15] + uuid
      + [
        UInt8(major >> 8), UInt8(major & 0xFF), UInt8(minor >> 8), UInt8(minor & 0xFF),
        UInt8(bitPattern: power),
      ]
  }

  static let fleetUUID: [UInt8] = [
    0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2, 0xB0, 0x60, 0xD0, 0xF5, 0xA7, 0x10, 0x96, 0xE0,
  ]
}

/// Writes btsnoop files byte by byte (big-endian fields, BlueZ src/shared/btsnoop.h), so tests
/// build captures without the reader's own encoder.
struct SnoopWriter {
  var bytes: [UInt8]

  init(datalink: UInt32, version: UInt32 = 1, magic: [UInt8] = Array("btsnoop".utf8) + [0]) {
    bytes = magic
    Self.put(version, &bytes)
    Self.put(datalink, &bytes)
  }

  static func put(_ v: UInt32, _ out: inout [UInt8]) {
    out += [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
  }

  /// Microseconds since 0 AD for a Unix time in seconds.
  static func stamp(_ unixSeconds: Double) -> UInt64 {
    0x00dc_ddb3_0f2f_8000 + UInt64(unixSeconds * 1_000_000)
  }

  mutating func record(flags: UInt32, time: Double, data: [UInt8], drops: UInt32 = 0) {
    Self.put(UInt32(data.count), &bytes)
    Self.put(UInt32(data.count), &bytes)
    Self.put(flags, &bytes)
    Self.put(drops, &bytes)
    let t = Self.stamp(time)
    Self.put(UInt32(t >> 32), &bytes)
    Self.put(UInt32(t & 0xFFFF_FFFF), &bytes)
    bytes += data
  }

  /// A monitor record: opcode in the low 16 bits of the flags, the index in the high 16.
  mutating func monitor(index: UInt16, opcode: UInt16, time: Double, data: [UInt8]) {
    record(flags: UInt32(index) << 16 | UInt32(opcode), time: time, data: data)
  }

  /// A monitor New Index record: type, bus, address, 8-byte name.
  mutating func newIndex(_ index: UInt16, time: Double) {
    monitor(
      index: index, opcode: 0, time: time,
      data: [0x00, 0x00] + [UInt8](repeating: UInt8(index), count: 6) + Array("hci\(index)".utf8)
        + [UInt8](repeating: 0, count: 4))
  }

  /// An H4 record: the indicator byte, then the packet; flags bit 0 = received, bit 1 = command/event.
  mutating func h4Event(time: Double, event: [UInt8]) {
    record(flags: 0x03, time: time, data: [0x04] + event)
  }
}
