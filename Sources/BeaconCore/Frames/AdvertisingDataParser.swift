/// Splits raw advertising data into AD structures.
///
/// Input is what an HCI LE Advertising Report carries: up to 31 bytes for a legacy PDU, up to 255
/// for extended advertising data reassembled from its fragments. Indices are checked before every
/// read, so no input reads past the buffer.
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

  public static func structures(_ bytes: [UInt8]) -> Result<[ADStructure], FrameRejection> {
    guard bytes.count <= maximumLength else {
      return .failure(
        FrameRejection(
          .dataTooLong, "advertising data is \(bytes.count) bytes; the limit is \(maximumLength)"))
    }
    var out: [ADStructure] = []
    var index = 0
    while index < bytes.count {
      let length = Int(bytes[index])
      if length == 0 {
        // A zero length octet ends the significant part; what follows must be zero padding.
        if bytes[index...].allSatisfy({ $0 == 0 }) { break }
        return .failure(
          FrameRejection(
            .zeroLengthStructure, "zero-length AD structure at offset \(index) followed by more data"))
      }
      guard length <= bytes.count - index - 1 else {
        return .failure(
          FrameRejection(
            .lengthPastEnd,
            "AD structure at offset \(index) claims \(length) bytes "
              + "but only \(bytes.count - index - 1) remain"))
      }
      let type = bytes[index + 1]
      out.append(ADStructure(type: type, data: Array(bytes[(index + 2)..<(index + 1 + length)])))
      index += 1 + length
    }
    return .success(out)
  }
}

extension Advertisement {
  /// Builds an advertisement from raw AD structures, as received in an HCI report.
  public static func parse(address: BluetoothAddress, rssi: Int?, adStructures bytes: [UInt8]) -> Result<
    Advertisement, FrameRejection
  > {
    let structures: [ADStructure]
    switch AdvertisingDataParser.structures(bytes) {
    case .success(let s): structures = s
    case .failure(let rejection): return .failure(rejection)
    }
    var ad = Advertisement(address: address, rssi: rssi)
    for s in structures {
      switch s.type {
      case AdvertisingDataParser.manufacturerSpecific:
        guard s.data.count >= 2 else {
          return .failure(
            FrameRejection(
              .truncatedStructure, "manufacturer data of \(s.data.count) bytes has no company ID"))
        }
        // The company identifier is little-endian on the air.
        let company = UInt16(s.data[0]) | UInt16(s.data[1]) << 8
        ad.manufacturerData.append(ManufacturerData(companyID: company, data: Array(s.data[2...])))
      case AdvertisingDataParser.serviceData16:
        guard s.data.count >= 2 else {
          return .failure(
            FrameRejection(.truncatedStructure, "16-bit service data of \(s.data.count) bytes has no UUID"))
        }
        let uuid = UInt16(s.data[0]) | UInt16(s.data[1]) << 8
        ad.serviceData.append(ServiceData(uuid: ServiceUUID(uuid16: uuid), data: Array(s.data[2...])))
      case AdvertisingDataParser.serviceData32:
        guard s.data.count >= 4 else {
          return .failure(
            FrameRejection(.truncatedStructure, "32-bit service data of \(s.data.count) bytes has no UUID"))
        }
        let uuid =
          UInt32(s.data[0]) | UInt32(s.data[1]) << 8 | UInt32(s.data[2]) << 16 | UInt32(s.data[3]) << 24
        ad.serviceData.append(ServiceData(uuid: ServiceUUID(uuid32: uuid), data: Array(s.data[4...])))
      case AdvertisingDataParser.serviceData128:
        guard s.data.count >= 16 else {
          return .failure(
            FrameRejection(.truncatedStructure, "128-bit service data of \(s.data.count) bytes has no UUID"))
        }
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
    return .success(ad)
  }
}
