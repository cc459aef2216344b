/// Why an advertisement or one of its frames was rejected. Every malformed input maps to one of
/// these; none of them is a crash or a read past the buffer.
public struct FrameRejection: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Reason: String, Hashable, Sendable, CaseIterable {
    /// The advertising data is longer than an extended advertising report can carry (255 bytes),
    /// or a structured (BlueZ) value could not have fit in one.
    case dataTooLong
    /// An AD structure's length octet runs past the end of the data.
    case lengthPastEnd
    /// A zero length octet followed by more non-zero data (zero padding after the significant
    /// part is allowed, Core Specification Vol 3, Part C, 11).
    case zeroLengthStructure
    /// An AD structure too short for its type (manufacturer data without a company ID, service
    /// data without its UUID).
    case truncatedStructure
    /// Apple manufacturer data of type 0x02 (iBeacon) whose length byte is not 0x15 or whose body
    /// is not 21 bytes.
    case iBeaconShortBody
    /// An AltBeacon code (0xBEAC) in manufacturer data that is not 24 bytes after the company ID
    /// (code, 20-byte beacon ID, reference RSSI, reserved byte).
    case altBeaconShortBody
    /// An Eddystone frame shorter than its type requires.
    case eddystoneShortFrame
    /// An Eddystone frame type this parser does not know (not UID 0x00, URL 0x10 or TLM 0x20; EID
    /// 0x30 is reported as unknown too).
    case eddystoneUnknownFrame
    /// An Eddystone-URL with a scheme byte above 0x03 or undecodable URL bytes.
    case eddystoneBadURL
    /// An Eddystone-TLM version this parser does not read (encrypted TLM, 0x01).
    case eddystoneUnsupportedTLM
    /// Input that is not valid hex, or a malformed field in a structured advertisement (for example
    /// a BlueZ ServiceData key that is not a UUID).
    case invalidEncoding
  }

  public var reason: Reason
  /// A human sentence: what was wrong, and where.
  public var detail: String

  public init(_ reason: Reason, _ detail: String) {
    self.reason = reason
    self.detail = detail
  }

  public var description: String { "\(reason.rawValue): \(detail)" }
}
