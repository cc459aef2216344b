/// A decoded HCI event: the ones a scanner acts on, and the rest by code.
///
/// Layouts from the Core Specification, Vol 4, Part E, 7.7 (events) and 7.7.65 (LE Meta).
public enum HCIEvent: Hashable, Sendable {
  /// Command Complete (0x0E): the command's opcode and its return parameters (the first is
  /// the status for every command this project sends).
  case commandComplete(opcode: UInt16, returnParameters: [UInt8])
  /// Command Status (0x0F).
  case commandStatus(status: UInt8, opcode: UInt16)
  /// LE Advertising Report (LE Meta 0x02), every report in the event, in order.
  case advertisingReports([AdvertisingReport])
  /// LE Extended Advertising Report (LE Meta 0x0D), every report in the event, in order. Each
  /// may be one fragment of a longer advertisement: see `ExtendedReportAssembler`.
  case extendedAdvertisingReports([AdvertisingReport])
  /// LE Directed Advertising Report (LE Meta 0x0B): directed at this host, carrying no data; a
  /// scanner has no use for them. The count of reports, checked for length.
  case directedAdvertisingReports(count: Int)
  /// Another LE Meta subevent.
  case leMeta(subevent: UInt8, parameters: [UInt8])
  /// Another event.
  case other(code: UInt8, parameters: [UInt8])

  public static let commandCompleteCode: UInt8 = 0x0E
  public static let commandStatusCode: UInt8 = 0x0F
  public static let leMetaCode: UInt8 = 0x3E
  public static let advertisingReportSubevent: UInt8 = 0x02
  public static let directedAdvertisingReportSubevent: UInt8 = 0x0B
  public static let extendedAdvertisingReportSubevent: UInt8 = 0x0D

  /// The most reports one event carries (Num_Reports ranges: 0x01–0x19 legacy and directed,
  /// 0x01–0x0A extended).
  static let maximumLegacyReports = 0x19
  static let maximumExtendedReports = 0x0A
  /// Data_Length limits: 31 bytes in a legacy PDU, 229 in one extended report.
  static let maximumLegacyData = 31
  static let maximumExtendedData = 229

  /// Decodes one HCI event packet: event code, parameter length, parameters (no H4 indicator).
  ///
  /// Legacy advertising reports are read report after report (event type, address type,
  /// address, data length, data, RSSI), which is how the Linux kernel
  /// (`hci_le_adv_report_evt`), btmon and controllers lay them out. The specification's table
  /// lists each field as an array `[i]`; reading it as arrays of each field (beacontools issue
  /// #78 shows what reading only the first report loses) would misread every event with more
  /// than one report.
  public static func parse(_ packet: some Collection<UInt8>) throws(HCIEventError) -> HCIEvent {
    var reader = ByteReader(Array(packet)[...])
    guard let code = reader.u8(), let length = reader.u8() else {
      throw HCIEventError(.truncatedHeader, "an HCI event needs 2 header bytes, got \(packet.count)")
    }
    guard reader.remaining == Int(length) else {
      throw HCIEventError(
        .lengthMismatch,
        "event 0x\(hex(code)) announces \(length) parameter bytes but carries \(reader.remaining)")
    }
    switch code {
    case commandCompleteCode:
      guard reader.u8() != nil, let opcode = reader.u16le() else {
        throw HCIEventError(.truncatedParameters, "Command Complete needs at least 3 parameter bytes")
      }
      return .commandComplete(opcode: opcode, returnParameters: Array(reader.rest()))
    case commandStatusCode:
      guard let status = reader.u8(), reader.u8() != nil, let opcode = reader.u16le(), reader.remaining == 0
      else {
        throw HCIEventError(.truncatedParameters, "Command Status has 4 parameter bytes, got \(length)")
      }
      return .commandStatus(status: status, opcode: opcode)
    case leMetaCode:
      guard let subevent = reader.u8() else {
        throw HCIEventError(.truncatedParameters, "LE Meta event without a subevent code")
      }
      switch subevent {
      case advertisingReportSubevent: return .advertisingReports(try legacyReports(&reader))
      case extendedAdvertisingReportSubevent: return .extendedAdvertisingReports(try extendedReports(&reader))
      case directedAdvertisingReportSubevent:
        return .directedAdvertisingReports(count: try directedReports(&reader))
      default: return .leMeta(subevent: subevent, parameters: Array(reader.rest()))
      }
    default:
      return .other(code: code, parameters: Array(reader.rest()))
    }
  }

  private static func reportCount(_ reader: inout ByteReader, limit: Int, what: String) throws(HCIEventError)
    -> Int
  {
    guard let count = reader.u8() else {
      throw HCIEventError(.truncatedParameters, "\(what) without Num_Reports")
    }
    guard (1...limit).contains(Int(count)) else {
      throw HCIEventError(.invalidReportCount, "\(what) with Num_Reports \(count); the range is 1–\(limit)")
    }
    return Int(count)
  }

  /// Reads report after report as the kernel's `hci_le_adv_report_evt` does (net/bluetooth/
  /// hci_event.c): each report is taken before the next is pulled, so damage in a later report
  /// (cut short, or Data_Length above 31) does not lose the ones before it. A report whose
  /// Data_Length is too long but whose bytes are all there is dropped and reading goes on, as
  /// the kernel does ("Dropping invalid advertising data"); a report cut short ends the event.
  /// When anything was damaged the error is thrown carrying the good reports in
  /// `deliveredReports`, so a caller delivers them and reports the damage.
  private static func legacyReports(_ reader: inout ByteReader) throws(HCIEventError) -> [AdvertisingReport] {
    let what = "LE Advertising Report"
    let count = try reportCount(&reader, limit: maximumLegacyReports, what: what)
    var reports: [AdvertisingReport] = []
    var damage: HCIEventError?
    for i in 0..<count {
      guard let eventType = reader.u8(), let addressType = reader.u8(), let address = reader.bytes(6),
        let dataLength = reader.u8()
      else {
        damage = .cutShortInHeader(what, report: i + 1, of: count)
        break
      }
      guard let data = reader.bytes(Int(dataLength)) else {
        damage = .cutShortInData(
          what, report: i + 1, dataLength: Int(dataLength), remaining: reader.remaining)
        break
      }
      guard let rssi = reader.u8() else {
        damage = HCIEventError(.truncatedParameters, "\(what): report \(i + 1) ends before its RSSI")
        break
      }
      guard Int(dataLength) <= maximumLegacyData else {
        damage =
          damage
          ?? HCIEventError(
            .dataTooLong, "\(what): report \(i + 1) has Data_Length \(dataLength); a legacy PDU carries ≤ 31")
        continue
      }
      reports.append(
        AdvertisingReport(
          format: .legacy, eventType: UInt16(eventType), addressType: addressType,
          address: DeviceAddress(wire: address), rssi: signed(rssi), data: Array(data)))
    }
    return try delivering(reports, damage: damage, remaining: reader.remaining, what: what, count: count)
  }

  /// An event's good reports, or its damage carrying them (`deliveredReports`); bytes left after
  /// the last report are damage too.
  private static func delivering(
    _ reports: [AdvertisingReport], damage: HCIEventError?, remaining: Int, what: String, count: Int
  ) throws(HCIEventError) -> [AdvertisingReport] {
    var damage = damage
    if damage == nil, remaining != 0 {
      damage = .bytesAfterReports(what, remaining: remaining, reports: count)
    }
    if var damage {
      damage.deliveredReports = reports
      throw damage
    }
    return reports
  }

  /// Like `legacyReports`, after the kernel's `hci_le_ext_adv_report_evt`: each report is taken
  /// before the next is pulled, so the good reports before a damaged one are delivered (in the
  /// error's `deliveredReports`).
  private static func extendedReports(_ reader: inout ByteReader) throws(HCIEventError) -> [AdvertisingReport]
  {
    let what = "LE Extended Advertising Report"
    let count = try reportCount(&reader, limit: maximumExtendedReports, what: what)
    var reports: [AdvertisingReport] = []
    var damage: HCIEventError?
    for i in 0..<count {
      guard let eventType = reader.u16le(), let addressType = reader.u8(), let address = reader.bytes(6),
        reader.u8() != nil, reader.u8() != nil,  // primary and secondary PHY
        let sid = reader.u8(), let txPower = reader.u8(), let rssi = reader.u8(),
        reader.u16le() != nil,  // periodic advertising interval
        reader.bytes(7) != nil,  // direct address type and address
        let dataLength = reader.u8()
      else {
        damage = .cutShortInHeader(what, report: i + 1, of: count)
        break
      }
      guard let data = reader.bytes(Int(dataLength)) else {
        damage = .cutShortInData(
          what, report: i + 1, dataLength: Int(dataLength), remaining: reader.remaining)
        break
      }
      guard Int(dataLength) <= maximumExtendedData else {
        damage =
          damage
          ?? HCIEventError(
            .dataTooLong, "\(what): report \(i + 1) has Data_Length \(dataLength); one report carries ≤ 229")
        continue
      }
      guard let status = AdvertisingReport.DataStatus(rawValue: UInt8((eventType >> 5) & 0x3)) else {
        damage =
          damage
          ?? HCIEventError(.reservedDataStatus, "\(what): report \(i + 1) has the reserved data status 0b11")
        continue
      }
      reports.append(
        AdvertisingReport(
          format: .extended, eventType: eventType, addressType: addressType,
          address: DeviceAddress(wire: address),
          rssi: signed(rssi), txPower: signed(txPower), sid: sid == 0xFF ? nil : sid, dataStatus: status,
          data: Array(data)))
    }
    return try delivering(reports, damage: damage, remaining: reader.remaining, what: what, count: count)
  }

  /// Each directed report is 16 bytes: event type, address type, address, direct address type,
  /// direct address, RSSI (Vol 4, Part E, 7.7.65.11).
  private static func directedReports(_ reader: inout ByteReader) throws(HCIEventError) -> Int {
    let what = "LE Directed Advertising Report"
    let count = try reportCount(&reader, limit: maximumLegacyReports, what: what)
    guard reader.remaining == count * 16 else {
      throw HCIEventError(
        reader.remaining < count * 16 ? .truncatedParameters : .trailingBytes,
        "\(what): \(count) reports need \(count * 16) bytes, got \(reader.remaining)")
    }
    return count
  }

  /// A signed dBm value; 127 means "not available" for both RSSI and TX power.
  private static func signed(_ byte: UInt8) -> Int? {
    byte == 0x7F ? nil : Int(Int8(bitPattern: byte))
  }
}

func hex(_ byte: UInt8) -> String {
  let digits = Array("0123456789abcdef".utf8)
  return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
}

/// Why an HCI event could not be decoded.
public struct HCIEventError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Kind: String, Hashable, Sendable, CaseIterable {
    /// Fewer than the 2 header bytes (event code, parameter length).
    case truncatedHeader
    /// The parameter length octet disagrees with the bytes present.
    case lengthMismatch
    /// A field, or a report's data, runs past the end of the event.
    case truncatedParameters
    /// Bytes left over after the last report.
    case trailingBytes
    /// Num_Reports of 0 or above the specification's range.
    case invalidReportCount
    /// Data_Length above what a report may carry.
    case dataTooLong
    /// An extended report's data status 0b11, which the specification reserves.
    case reservedDataStatus
  }

  public var kind: Kind
  public var detail: String
  /// The advertising reports of the event that were whole before the damage (or around a report
  /// that was dropped), in order; empty for every other error. Callers deliver them, as the
  /// kernel's `hci_le_adv_report_evt` processes each report before pulling the next.
  public var deliveredReports: [AdvertisingReport] = []

  public init(_ kind: Kind, _ detail: String) {
    self.kind = kind
    self.detail = detail
  }

  public var description: String { "\(kind.rawValue): \(detail)" }
}

extension HCIEventError {
  /// Report `number` of `count` ends inside its fixed fields.
  static func cutShortInHeader(_ what: String, report number: Int, of count: Int) -> HCIEventError {
    HCIEventError(.truncatedParameters, "\(what): report \(number) of \(count) is cut short in its header")
  }

  /// Report `number`'s data is longer than the bytes left in the event.
  static func cutShortInData(_ what: String, report number: Int, dataLength: Int, remaining: Int)
    -> HCIEventError
  {
    HCIEventError(
      .truncatedParameters,
      "\(what): report \(number) has Data_Length \(dataLength) but only \(remaining) bytes remain")
  }

  /// Bytes follow the last of the `count` reports the event announced.
  static func bytesAfterReports(_ what: String, remaining: Int, reports count: Int) -> HCIEventError {
    HCIEventError(.trailingBytes, "\(what): \(remaining) bytes after the last of \(count) reports")
  }
}
