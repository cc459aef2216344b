/// Splits raw advertising data into AD structures.
///
/// Input is what an HCI LE Advertising Report carries: up to 31 bytes for a legacy PDU, up to 255
/// for extended advertising data reassembled from its fragments. Indices are checked before every
/// read, so no input reads past the buffer.
///
/// Damage ends the data rather than voiding it: a structure running past the end, or a zero length
/// octet followed by anything but zero padding, stops the split and the structures before it are
/// kept (see `split`). The damage is still reported: `split` returns it as a `malformedTail`
/// rejection, which the raw paths (`simulate`, `replay`, HCI scanning) emit as a `rejected` event
/// beside the advertisement. Only data longer than any advertisement is rejected whole.
public enum AdvertisingDataParser {
  /// The longest advertising data accepted: a legacy PDU carries up to 31 bytes; extended
  /// advertising data arrives in reports of up to 229 bytes each (Core Specification Vol 4, Part E,
  /// 7.7.65.13) that the host reassembles. Anything longer is rejected as not coming from one
  /// advertisement.
  public static let maximumLength = 255

  /// AD type: manufacturer specific data.
  public static let manufacturerSpecific: UInt8 = 0xFF
  /// AD types: service data with a 16-, 32- or 128-bit UUID.
  public static let serviceData16: UInt8 = 0x16
  public static let serviceData32: UInt8 = 0x20
  public static let serviceData128: UInt8 = 0x21
  /// AD type: TX power level.
  public static let txPowerLevel: UInt8 = 0x0A
  /// AD types: shortened and complete local name.
  public static let shortenedLocalName: UInt8 = 0x08
  public static let completeLocalName: UInt8 = 0x09

  /// The AD structures, without what ended the data early (`split` reports it).
  public static func structures(_ bytes: [UInt8]) -> Result<[ADStructure], FrameRejection> {
    split(bytes).map(\.structures)
  }

  /// The AD structures before any damage, and the damage: nil when the data ends cleanly (at
  /// its end, or at a zero length octet followed only by zero padding).
  public static func split(_ bytes: [UInt8]) -> Result<
    (structures: [ADStructure], tail: FrameRejection?), FrameRejection
  > {
    guard bytes.count <= maximumLength else {
      return .failure(
        FrameRejection(
          .dataTooLong, "advertising data is \(bytes.count) bytes; the limit is \(maximumLength)"))
    }
    var out: [ADStructure] = []
    var index = 0
    var tail: FrameRejection?
    while index < bytes.count {
      let length = Int(bytes[index])
      // A zero length octet ends the advertising data: "the data part contains [...] a sequence
      // of AD structures [...] the remainder of the data is padded with zeros" (Core Specification
      // Vol 3, Part C, 11). What follows is not read, zero padding or not, and the structures
      // before it are kept, as BlueZ does (src/eir.c `eir_parse`: "Check for
      // the end of EIR", `if (field_len == 0) break;`) and Android (`ScanRecord.parseFromBytes`:
      // `if (length == 0) break;`).
      if length == 0 {
        // Padding is zeros; anything else after the end is a damaged tail, kept out but named.
        if let stray = bytes[(index + 1)...].firstIndex(where: { $0 != 0 }) {
          tail = FrameRejection(
            .malformedTail,
            "advertising data ends with a zero length octet at byte \(index) but byte \(stray) after it is 0x\(hexByte(bytes[stray])), not padding; the \(out.count) AD structure(s) before it are kept"
          )
        }
        break
      }
      // A structure whose length runs past the end is dropped, and parsing stops there; the
      // structures before it are kept, as BlueZ's `eir_parse` does ("Do not continue EIR Data
      // parsing if got incorrect length", `if (len > eir_len) break;`). bluetoothd builds Device1's
      // ManufacturerData and ServiceData that way, so the BlueZ path and the raw (HCI) path give
      // the same beacons for the same bytes.
      guard length <= bytes.count - index - 1 else {
        tail = FrameRejection(
          .malformedTail,
          "the AD structure at byte \(index) has length \(length) but only \(bytes.count - index - 1) byte(s) follow; the \(out.count) AD structure(s) before it are kept"
        )
        break
      }
      let type = bytes[index + 1]
      out.append(ADStructure(type: type, data: Array(bytes[(index + 2)..<(index + 1 + length)])))
      index += 1 + length
    }
    return .success((out, tail))
  }

  private static func hexByte(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
  }
}

extension Advertisement {
  /// Builds an advertisement from raw AD structures, as received in an HCI report.
  public static func parse(address: BluetoothAddress, rssi: Int?, adStructures bytes: [UInt8]) -> Result<
    Advertisement, FrameRejection
  > {
    parseKeepingTail(address: address, rssi: rssi, adStructures: bytes).map(\.advertisement)
  }

  /// `parse`, with the damage that ended the data early (`AdvertisingDataParser.split`): the
  /// advertisement holds what came before it, and `tail` says what was wrong and where.
  public static func parseKeepingTail(address: BluetoothAddress, rssi: Int?, adStructures bytes: [UInt8])
    -> Result<(advertisement: Advertisement, tail: FrameRejection?), FrameRejection>
  {
    let structures: [ADStructure]
    let tail: FrameRejection?
    switch AdvertisingDataParser.split(bytes) {
    case .success(let split): (structures, tail) = split
    case .failure(let rejection): return .failure(rejection)
    }
    var ad = Advertisement(address: address, rssi: rssi)
    for s in structures {
      switch s.type {
      case AdvertisingDataParser.manufacturerSpecific:
        // Too short for a company ID: skipped, the rest kept (BlueZ `eir_parse_msd`:
        // `if (len < 2 ...) return;`).
        guard s.data.count >= 2 else { continue }
        // The company identifier is little-endian on the air.
        let company = UInt16(s.data[0]) | UInt16(s.data[1]) << 8
        ad.manufacturerData.append(ManufacturerData(companyID: company, data: Array(s.data[2...])))
      case AdvertisingDataParser.serviceData16:
        // Too short for its UUID: skipped, the rest kept (BlueZ `eir_parse_uuid16_data`,
        // `eir_parse_uuid32_data`, `eir_parse_uuid128_data`: `if (!data || len < N) return;`).
        guard s.data.count >= 2 else { continue }
        let uuid = UInt16(s.data[0]) | UInt16(s.data[1]) << 8
        ad.serviceData.append(ServiceData(uuid: ServiceUUID(uuid16: uuid), data: Array(s.data[2...])))
      case AdvertisingDataParser.serviceData32:
        guard s.data.count >= 4 else { continue }
        let uuid =
          UInt32(s.data[0]) | UInt32(s.data[1]) << 8 | UInt32(s.data[2]) << 16 | UInt32(s.data[3]) << 24
        ad.serviceData.append(ServiceData(uuid: ServiceUUID(uuid32: uuid), data: Array(s.data[4...])))
      case AdvertisingDataParser.serviceData128:
        guard s.data.count >= 16 else { continue }
        // 128-bit UUIDs are little-endian on the air.
        let uuid = ServiceUUID(bytes: Array(s.data[0..<16].reversed()))!
        ad.serviceData.append(ServiceData(uuid: uuid, data: Array(s.data[16...])))
      case AdvertisingDataParser.txPowerLevel:
        if let first = s.data.first { ad.txPower = Int(Int8(bitPattern: first)) }
      case AdvertisingDataParser.completeLocalName, AdvertisingDataParser.shortenedLocalName:
        if ad.localName == nil || s.type == AdvertisingDataParser.completeLocalName {
          ad.localName = String(decoding: s.data, as: UTF8.self)
        }
      default:
        continue
      }
    }
    return .success((ad, tail))
  }

  /// What a raw advertisement gives a source: its sighting, then a `rejected` event for a
  /// damaged tail; or the rejection alone when the data is refused whole.
  public static func sourceEvents(address: BluetoothAddress, rssi: Int?, adStructures bytes: [UInt8])
    -> [SourceEvent]
  {
    switch parseKeepingTail(address: address, rssi: rssi, adStructures: bytes) {
    case .success((let ad, nil)): return [.sighting(ad)]
    case .success((let ad, let tail?)): return [.sighting(ad), .rejected(address: address, tail)]
    case .failure(let rejection): return [.rejected(address: address, rejection)]
    }
  }
}
