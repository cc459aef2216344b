/// An HCI packet taken out of a btsnoop record, with the controller it belongs to.
public struct CapturedPacket: Hashable, Sendable {
  public enum Kind: Hashable, Sendable {
    /// An HCI command, host to controller.
    case command
    /// An HCI event, controller to host.
    case event
    /// Anything else: ACL/SCO/ISO data, and the monitor's own records (new index, system notes).
    case other
  }

  /// The record's position in the capture, from 0.
  public var record: Int
  /// Microseconds since 0 AD, as btsnoop stores it.
  public var timestamp: UInt64
  /// The controller index (`hciN`) from a monitor capture; nil in an H4 capture, which holds one
  /// controller.
  public var index: UInt16?
  public var kind: Kind
  /// The HCI packet without any H4 indicator: for an event, the event code, its parameter length
  /// and its parameters.
  public var data: [UInt8]

  public init(record: Int, timestamp: UInt64, index: UInt16?, kind: Kind, data: [UInt8]) {
    self.record = record
    self.timestamp = timestamp
    self.index = index
    self.kind = kind
    self.data = data
  }
}

/// The Linux monitor channel's record opcodes, carried in the low 16 bits of a datalink 2001
/// record's flags; the controller index is in the high 16 bits (BlueZ src/shared/btsnoop.h).
public struct MonitorOpcode: RawRepresentable, Hashable, Sendable {
  public var rawValue: UInt16
  public init(rawValue: UInt16) { self.rawValue = rawValue }

  public static let newIndex = MonitorOpcode(rawValue: 0)
  public static let deleteIndex = MonitorOpcode(rawValue: 1)
  public static let commandPacket = MonitorOpcode(rawValue: 2)
  public static let eventPacket = MonitorOpcode(rawValue: 3)
  public static let aclTxPacket = MonitorOpcode(rawValue: 4)
  public static let aclRxPacket = MonitorOpcode(rawValue: 5)
  public static let openIndex = MonitorOpcode(rawValue: 8)
  public static let closeIndex = MonitorOpcode(rawValue: 9)
  public static let indexInfo = MonitorOpcode(rawValue: 10)
  public static let systemNote = MonitorOpcode(rawValue: 12)
  public static let userLogging = MonitorOpcode(rawValue: 13)

  /// The flags word of a monitor record for this opcode on controller `index`.
  public func flags(index: UInt16) -> UInt32 { UInt32(index) << 16 | UInt32(rawValue) }
}

/// H4 packet indicators: the first byte of every record in a datalink 1002 capture (Core
/// Specification Vol 4, Part A, 2).
public enum H4PacketType {
  public static let command: UInt8 = 0x01
  public static let acl: UInt8 = 0x02
  public static let sco: UInt8 = 0x03
  public static let event: UInt8 = 0x04
  public static let iso: UInt8 = 0x05
}

extension BTSnoopCapture {
  /// The capture's records as HCI packets, in file order.
  public var packets: [CapturedPacket] {
    records.enumerated().map { number, record in
      switch datalink {
      case .monitor:
        let opcode = MonitorOpcode(rawValue: UInt16(truncatingIfNeeded: record.flags))
        let index = UInt16(truncatingIfNeeded: record.flags >> 16)
        let kind: CapturedPacket.Kind =
          opcode == .eventPacket ? .event : opcode == .commandPacket ? .command : .other
        return CapturedPacket(
          record: number, timestamp: record.timestamp, index: index, kind: kind, data: record.data)
      default:
        // H4: the indicator byte says what follows; an empty record is "other".
        let kind: CapturedPacket.Kind
        switch record.data.first {
        case H4PacketType.event: kind = .event
        case H4PacketType.command: kind = .command
        default: kind = .other
        }
        return CapturedPacket(
          record: number, timestamp: record.timestamp, index: nil, kind: kind,
          data: Array(record.data.dropFirst()))
      }
    }
  }
}
