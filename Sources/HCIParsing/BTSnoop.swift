/// A btsnoop capture, as `btmon -w` and Android's snoop log write it.
///
/// Layout (all integers big-endian; BlueZ src/shared/btsnoop.h, and the format's original
/// description in RFC 1761's style from Frontline):
/// - a 16-byte header: the magic "btsnoop\0", version (1), datalink type;
/// - records of a 24-byte header (original length, included length, flags, cumulative drops,
///   timestamp in microseconds since midnight 1 January of year 0 AD) and the included bytes.
public struct BTSnoopCapture: Sendable {
  /// The datalink types this reader understands.
  public struct Datalink: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// HCI UART (H4): each record starts with the H4 packet indicator. BlueZ `BTSNOOP_FORMAT_UART`.
    public static let hciUART = Datalink(rawValue: 1002)
    /// The Linux monitor channel (`btmon -w`): the opcode and controller index are in the flags.
    /// BlueZ `BTSNOOP_FORMAT_MONITOR`.
    public static let monitor = Datalink(rawValue: 2001)

    public var description: String {
      switch self {
      case .hciUART: return "1002 (HCI UART H4)"
      case .monitor: return "2001 (Linux monitor)"
      default: return String(rawValue)
      }
    }
  }

  /// One record of the capture.
  public struct Record: Hashable, Sendable {
    /// The packet's length on the wire; larger than `data.count` when the capture truncated it.
    public var originalLength: UInt32
    public var flags: UInt32
    public var cumulativeDrops: UInt32
    /// Microseconds since midnight, 1 January 0 AD (btsnoop's epoch).
    public var timestamp: UInt64
    public var data: [UInt8]

    public init(
      originalLength: UInt32, flags: UInt32, cumulativeDrops: UInt32, timestamp: UInt64, data: [UInt8]
    ) {
      self.originalLength = originalLength
      self.flags = flags
      self.cumulativeDrops = cumulativeDrops
      self.timestamp = timestamp
      self.data = data
    }

    /// Microseconds between btsnoop's epoch (0 AD) and the Unix epoch (BlueZ btsnoop.c).
    public static let unixEpochOffset: UInt64 = 0x00dc_ddb3_0f2f_8000

    /// The timestamp as microseconds since 1970, or nil for a time before 1970 (or past 2⁶³ µs).
    public var unixMicroseconds: Int64? {
      timestamp >= Self.unixEpochOffset ? Int64(exactly: timestamp - Self.unixEpochOffset) : nil
    }
  }

  /// The magic that opens every btsnoop file.
  public static let magic: [UInt8] = Array("btsnoop".utf8) + [0]
  public static let headerLength = 16
  public static let recordHeaderLength = 24

  public var version: UInt32
  public var datalink: Datalink
  public var records: [Record]

  public init(version: UInt32 = 1, datalink: Datalink, records: [Record]) {
    self.version = version
    self.datalink = datalink
    self.records = records
  }

  /// Reads a whole capture. Throws on the first problem: not a btsnoop file, a version or
  /// datalink this reader does not handle, or a record cut short.
  public init(bytes: [UInt8]) throws(BTSnoopError) {
    let header = try Self.header(bytes)
    version = header.version
    datalink = header.datalink
    var reader = ByteReader(bytes[...])
    _ = reader.bytes(Self.headerLength)
    var records: [Record] = []
    while reader.remaining > 0 {
      let at = reader.position
      let number = records.count + 1
      guard let original = reader.u32be(), let included = reader.u32be(), let flags = reader.u32be(),
        let drops = reader.u32be(), let timestamp = reader.u64be()
      else {
        throw BTSnoopError(
          .truncatedRecord,
          "record \(number) at offset \(at): the file ends inside the \(Self.recordHeaderLength)-byte record header"
        )
      }
      guard included <= original else {
        throw BTSnoopError(
          .malformedRecord,
          "record \(number) at offset \(at): included length \(included) exceeds original length \(original)")
      }
      guard let data = reader.bytes(Int(included)) else {
        throw BTSnoopError(
          .truncatedRecord,
          "record \(number) at offset \(at): \(included) bytes announced, \(reader.remaining) left in the file"
        )
      }
      records.append(
        Record(
          originalLength: original, flags: flags, cumulativeDrops: drops, timestamp: timestamp,
          data: Array(data)))
    }
    self.records = records
  }

  /// Checks the 16-byte header (the first bytes of a file; more may follow): the magic, the
  /// version and a datalink this reader handles. `replay` checks it before reading the rest, so
  /// that what is not a capture is refused at once.
  public static func header(_ bytes: [UInt8]) throws(BTSnoopError) -> (version: UInt32, datalink: Datalink) {
    var reader = ByteReader(bytes[...])
    guard let magic = reader.bytes(8), Array(magic) == Self.magic else {
      throw BTSnoopError(.notBTSnoop, "the file does not start with the btsnoop magic \"btsnoop\\0\"")
    }
    guard let version = reader.u32be(), let datalink = reader.u32be() else {
      throw BTSnoopError(.truncatedHeader, "the file ends inside its 16-byte header (\(bytes.count) bytes)")
    }
    guard version == 1 else {
      throw BTSnoopError(.unsupportedVersion, "btsnoop version \(version); only version 1 exists")
    }
    guard datalink == Datalink.monitor.rawValue || datalink == Datalink.hciUART.rawValue else {
      throw BTSnoopError(
        .unsupportedDatalink,
        "datalink \(datalink); this reader handles 2001 (Linux monitor, btmon -w) and 1002 (HCI UART H4)")
    }
    return (version, Datalink(rawValue: datalink))
  }

  /// The file's bytes: the inverse of `init(bytes:)`. Tests and tools build captures with it.
  public var bytes: [UInt8] {
    var out = Self.magic
    out.appendBigEndian(version)
    out.appendBigEndian(datalink.rawValue)
    for record in records {
      out.appendBigEndian(record.originalLength)
      out.appendBigEndian(UInt32(record.data.count))
      out.appendBigEndian(record.flags)
      out.appendBigEndian(record.cumulativeDrops)
      out.appendBigEndian(UInt32(truncatingIfNeeded: record.timestamp >> 32))
      out.appendBigEndian(UInt32(truncatingIfNeeded: record.timestamp))
      out += record.data
    }
    return out
  }
}

extension [UInt8] {
  mutating func appendBigEndian(_ value: UInt32) {
    append(contentsOf: [
      UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8),
      UInt8(truncatingIfNeeded: value),
    ])
  }
}

/// Why a file could not be read as a btsnoop capture.
public struct BTSnoopError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Kind: String, Hashable, Sendable, CaseIterable {
    /// The magic is missing: this is not a btsnoop file.
    case notBTSnoop
    /// The file ends inside the 16-byte header.
    case truncatedHeader
    /// A version other than 1.
    case unsupportedVersion
    /// A datalink other than 2001 (monitor) or 1002 (H4).
    case unsupportedDatalink
    /// The file ends inside a record's header or its data.
    case truncatedRecord
    /// A record whose lengths contradict each other.
    case malformedRecord
  }

  public var kind: Kind
  /// A human sentence: what was wrong, and where.
  public var detail: String

  public init(_ kind: Kind, _ detail: String) {
    self.kind = kind
    self.detail = detail
  }

  public var description: String {
    switch kind {
    case .notBTSnoop: return "not a btsnoop capture: \(detail)"
    case .truncatedHeader, .truncatedRecord: return "truncated btsnoop capture: \(detail)"
    case .unsupportedVersion, .unsupportedDatalink: return "unsupported btsnoop capture: \(detail)"
    case .malformedRecord: return "malformed btsnoop capture: \(detail)"
    }
  }
}
