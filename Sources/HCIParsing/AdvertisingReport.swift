/// A device address as HCI carries it, printed most significant byte first like BlueZ.
public struct DeviceAddress: Hashable, Sendable, CustomStringConvertible {
  /// The six bytes, most significant first (HCI sends them least significant first).
  public var bytes: [UInt8]

  public init(bytes: [UInt8]) { self.bytes = bytes }

  /// From the six bytes as they appear in an HCI packet (least significant first).
  public init(wire: some Collection<UInt8>) { self.bytes = Array(wire.reversed()) }

  /// The six bytes in HCI order (least significant first).
  public var wire: [UInt8] { bytes.reversed() }

  public var description: String {
    bytes.map { byte in
      let digits = Array("0123456789ABCDEF".utf8)
      return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
    }
    .joined(separator: ":")
  }
}

/// One advertising report from an LE Advertising Report (legacy) or LE Extended Advertising
/// Report event, with RSSI and TX power already mapped from "127 = not available" to nil.
public struct AdvertisingReport: Hashable, Sendable {
  public enum Format: Hashable, Sendable {
    /// LE Advertising Report (LE Meta subevent 0x02).
    case legacy
    /// LE Extended Advertising Report (LE Meta subevent 0x0D).
    case extended
  }

  /// Whether the controller delivered all of the advertising data (extended reports, Event_Type
  /// bits 5–6; legacy reports are always complete).
  public enum DataStatus: UInt8, Hashable, Sendable {
    case complete = 0
    /// More fragments of the same advertisement follow in later reports.
    case incompleteMoreToCome = 1
    /// The controller gave up: the data is cut short and nothing follows.
    case incompleteTruncated = 2
  }

  public var format: Format
  /// Legacy: ADV_IND 0x00, ADV_DIRECT_IND 0x01, ADV_SCAN_IND 0x02, ADV_NONCONN_IND 0x03,
  /// SCAN_RSP 0x04. Extended: the Event_Type bit field.
  public var eventType: UInt16
  /// 0x00 public, 0x01 random, 0x02/0x03 resolved identity, 0xFF anonymous (extended only).
  public var addressType: UInt8
  public var address: DeviceAddress
  /// dBm; nil when the controller reported 127 (not available).
  public var rssi: Int?
  /// dBm (extended only); nil when 127 (not available) or a legacy report.
  public var txPower: Int?
  /// The advertising set ID (extended only); nil when 0xFF (no ADI field) or a legacy report.
  public var sid: UInt8?
  public var dataStatus: DataStatus
  /// The advertising data: AD structures.
  public var data: [UInt8]

  public init(
    format: Format, eventType: UInt16, addressType: UInt8, address: DeviceAddress, rssi: Int?,
    txPower: Int? = nil, sid: UInt8? = nil, dataStatus: DataStatus = .complete, data: [UInt8]
  ) {
    self.format = format
    self.eventType = eventType
    self.addressType = addressType
    self.address = address
    self.rssi = rssi
    self.txPower = txPower
    self.sid = sid
    self.dataStatus = dataStatus
    self.data = data
  }

  /// A scan response rather than the advertisement itself.
  public var isScanResponse: Bool {
    switch format {
    case .legacy: return eventType == 0x04
    case .extended: return eventType & 0x0008 != 0
    }
  }
}
