/// An Eddystone encrypted TLM frame (google/eddystone eddystone-tlm/tlm-encrypted.md): the
/// service data of 0xFEAA with frame type 0x20 and version 0x01, 18 bytes:
///
/// | offset | field |
/// |---|---|
/// | 0 | 0x20 |
/// | 1 | 0x01 |
/// | 2-13 | the 12 TLM bytes of a plain TLM frame (battery, temperature, counts), encrypted |
/// | 14-15 | salt |
/// | 16-17 | MIC: the AES-EAX tag, truncated to 16 bits |
///
/// The nonce is 48 bits: the beacon's clock with its K low bits cleared (as for the EID), 32-bit
/// big-endian, then the salt. The key is the identity key; there is no header.
public struct EncryptedTLM: Hashable, Sendable {
  public static let frameType: UInt8 = 0x20
  public static let version: UInt8 = 0x01
  public static let length = 18

  public let ciphertext: [UInt8]
  public let salt: [UInt8]
  public let mic: [UInt8]

  /// Why service data is not an encrypted TLM frame.
  public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
    case notEncryptedTLM
    case wrongLength(Int)
    public var description: String {
      switch self {
      case .notEncryptedTLM: "not an encrypted TLM frame (frame type 0x20, version 0x01)"
      case .wrongLength(let n): "an encrypted TLM frame is 18 bytes, not \(n)"
      }
    }
  }

  public init(serviceData: some Collection<UInt8>) throws(Refusal) {
    let bytes = Array(serviceData.prefix(Self.length + 1))
    guard bytes.count >= 2, bytes[0] == Self.frameType, bytes[1] == Self.version else {
      throw .notEncryptedTLM
    }
    guard serviceData.count == Self.length else { throw .wrongLength(serviceData.count) }
    ciphertext = Array(bytes[2..<14])
    salt = Array(bytes[14..<16])
    mic = Array(bytes[16..<18])
  }

  /// The nonce for a beacon clock and this frame's salt.
  public func nonce(rotationExponent k: RotationExponent, clock: UInt32) -> [UInt8] {
    Self.nonce(rotationExponent: k, clock: clock, salt: salt)
  }

  static func nonce(rotationExponent k: RotationExponent, clock: UInt32, salt: [UInt8]) -> [UInt8] {
    let truncated = (clock >> UInt32(k.rawValue)) << UInt32(k.rawValue)
    return (0..<4).map { UInt8(truncatingIfNeeded: truncated >> (24 - 8 * UInt32($0))) } + salt
  }

  /// The 12 plain TLM bytes when the MIC verifies under this key and clock; nil otherwise. (With
  /// a 16-bit MIC a wrong key or clock passes once in 65,536 tries, as the spec accepts.)
  public func open(identityKey: AES128Key, rotationExponent k: RotationExponent, clock: UInt32) -> [UInt8]? {
    identityKey.eaxOpen(nonce: nonce(rotationExponent: k, clock: clock), ciphertext: ciphertext, tag: mic)
  }

  /// The plain TLM frame (version 0x00, 14 bytes) that `open` gives the bytes of, so that the
  /// plain TLM parser reads battery, temperature and counts as it does for any beacon.
  public static func plainFrame(tlm: [UInt8]) -> [UInt8] { [frameType, 0x00] + tlm }

  /// What a beacon sends: for tests and simulated beacons.
  public static func seal(
    tlm: [UInt8], identityKey: AES128Key, rotationExponent k: RotationExponent, clock: UInt32, salt: [UInt8]
  ) -> [UInt8] {
    precondition(tlm.count == 12 && salt.count == 2, "12 TLM bytes and a 2-byte salt")
    let sealed = identityKey.eaxSeal(
      nonce: nonce(rotationExponent: k, clock: clock, salt: salt), plaintext: tlm, tagLength: 2)
    return [frameType, version] + sealed.ciphertext + salt + sealed.tag
  }
}
