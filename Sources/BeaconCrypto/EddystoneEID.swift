/// Eddystone-EID's rotation period exponent K: the beacon makes a new EID every 2^K seconds
/// (google/eddystone eddystone-eid/eid-computation.md: "a value between 0 and 15").
public struct RotationExponent: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
  public let rawValue: UInt8

  /// Nil outside 0...15.
  public init?(rawValue: UInt8) {
    guard rawValue <= 15 else { return nil }
    self.rawValue = rawValue
  }

  /// The rotation period, 2^K seconds.
  public var periodSeconds: Int64 { 1 << Int64(rawValue) }
  public var description: String { String(rawValue) }
  public static func < (a: RotationExponent, b: RotationExponent) -> Bool { a.rawValue < b.rawValue }
}

/// The Eddystone-EID computation (google/eddystone eddystone-eid/eid-computation.md), over
/// nettle's AES-128. Pure: the caller supplies the beacon's clock.
public enum EddystoneEID {
  /// How long one temporary key lasts: it changes when the top 16 bits of the clock do. The spec
  /// recommends caching it this long ("Implementation guidelines").
  public static let temporaryKeySeconds: Int64 = 65_536

  /// The temporary key for a beacon clock: AES-128 under the identity key of
  /// [0x00 x 11, 0xFF (salt), 0x00, 0x00, clock's top 16 bits, big-endian].
  public static func temporaryKey(identityKey: AES128Key, clock: UInt32) -> AES128Key {
    identityKey.derive(encrypting: temporaryKeyBlock(clock: clock))
  }

  /// The block the temporary key is the encryption of.
  public static func temporaryKeyBlock(clock: UInt32) -> AESBlock {
    AESBlock(high: 0, low: 0xFF << 32 | UInt64(clock >> 16))
  }

  /// The 8-byte EID (as a big-endian integer: byte 0 most significant) for a clock: the first 8
  /// bytes of AES-128 under the temporary key of [0x00 x 11, K, clock with its K low bits
  /// cleared, 32-bit big-endian].
  public static func eid(temporaryKey: AES128Key, rotationExponent k: RotationExponent, clock: UInt32)
    -> UInt64
  {
    temporaryKey.encrypt(eidBlock(rotationExponent: k, clock: clock)).high
  }

  /// Both steps at once: what a beacon advertises at `clock`.
  public static func eid(identityKey: AES128Key, rotationExponent k: RotationExponent, clock: UInt32)
    -> UInt64
  {
    eid(temporaryKey: temporaryKey(identityKey: identityKey, clock: clock), rotationExponent: k, clock: clock)
  }

  /// The block the EID is the (truncated) encryption of.
  public static func eidBlock(rotationExponent k: RotationExponent, clock: UInt32) -> AESBlock {
    let truncated = (clock >> UInt32(k.rawValue)) << UInt32(k.rawValue)
    return AESBlock(high: 0, low: UInt64(k.rawValue) << 32 | UInt64(truncated))
  }

  /// The EID's 8 bytes, as they appear in the frame.
  public static func bytes(of eid: UInt64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: eid >> (56 - 8 * $0)) }
  }

  /// The EID in an Eddystone-EID frame (service data of 0xFEAA: frame type 0x30, the ranging
  /// byte, then 8 EID bytes); nil for anything else. More bytes after the EID are refused, as
  /// the frame is exactly 10 bytes.
  public static func eid(fromServiceData data: some Collection<UInt8>) -> UInt64? {
    guard data.count == 10, data.first == 0x30 else { return nil }
    return data.dropFirst(2).reduce(0) { $0 << 8 | UInt64($1) }
  }
}
