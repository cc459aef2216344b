/// Why an advertisement or one of its frames was rejected. Every malformed input maps to one of
/// these; none of them is a crash or a read past the buffer.
///
/// Damaged AD structures end the data and the structures before them are kept
/// (`AdvertisingDataParser`); the damage is a `malformedTail` rejection beside them. Not
/// rejections: a structure too short for its type is skipped, and Eddystone frames
/// this project does not decode (EID, encrypted TLM, Find Hub, unknown types) are `IgnoredFrame`s,
/// counted per kind.
public struct FrameRejection: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Reason: String, Hashable, Sendable, CaseIterable {
    /// The advertising data is longer than an extended advertising report can carry (255 bytes),
    /// or a structured (BlueZ) value could not have fit in one.
    case dataTooLong
    /// Apple manufacturer data of type 0x02 (iBeacon) whose length byte is not 0x15 or whose body
    /// is not 21 bytes.
    case iBeaconShortBody
    /// An AltBeacon code (0xBEAC) in manufacturer data that is neither 24 bytes after the company ID
    /// (code, 20-byte beacon ID, reference RSSI, reserved byte) nor 23 (the reserved byte left out,
    /// which is accepted).
    case altBeaconShortBody
    /// An Eddystone frame shorter than its type requires.
    case eddystoneShortFrame
    /// An Eddystone-URL with a scheme byte above 0x03 or undecodable URL bytes.
    case eddystoneBadURL
    /// The advertising data ends in damage: an AD structure whose length runs past the end, or a
    /// zero length octet followed by bytes that are not zero padding. The structures before it
    /// are kept.
    case malformedTail
    /// Input that is not valid hex, or a malformed field in a structured advertisement (for example
    /// a BlueZ ServiceData key that is not a UUID).
    case invalidEncoding
    /// A paired beacon's Eddystone-EID from a window older than the newest already heard from
    /// it: a recording played back (docs/authentication.md, "Tracking and replay"). Refused.
    case eidReplay
    /// A paired device's resolvable private address first heard more than `rpaMaxAge` ago, or
    /// before a newer address of the same device: a copy of an address heard before
    /// (docs/authentication.md, "What an RPA proves"). Not proven; the advertisement counts as
    /// one sent in clear.
    case rpaReplay
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
