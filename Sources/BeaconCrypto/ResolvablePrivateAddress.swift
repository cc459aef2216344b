/// A resolvable private address (Bluetooth Core Vol 6 Part B 1.3.2.2): a random device address
/// whose two most significant bits are 01, whose top 24 bits are `prand` (the 01 included) and
/// whose low 24 bits are `hash = ah(IRK, prand)`.
public struct ResolvablePrivateAddress: Hashable, Sendable {
  /// The 48-bit address, most significant byte first as printed ("70:81:94:0D:FB:AA").
  public let address: UInt64

  /// Nil unless the top two bits of the 48-bit address are 01.
  public init?(address: UInt64) {
    guard address >> 48 == 0, address >> 46 == 0b01 else { return nil }
    self.address = address
  }

  public var prand: UInt32 { UInt32(truncatingIfNeeded: address >> 24) }
  public var hash: UInt32 { UInt32(truncatingIfNeeded: address & 0xFF_FFFF) }

  /// Whether this address was made with `irk`: one AES-128 block.
  public func isResolved(by irk: AES128Key) -> Bool { Self.ah(irk: irk, prand: prand) == hash }

  /// The random address hash function ah (Core Vol 3 Part H 2.2.2):
  /// ah(k, r) = e(k, r') mod 2^24, r' = 104 zero bits || r, with e AES-128 and the most
  /// significant octet first in key, plaintext and result. `prand`'s low 24 bits are r.
  public static func ah(irk: AES128Key, prand: UInt32) -> UInt32 {
    let block = irk.encrypt(AESBlock(high: 0, low: UInt64(prand & 0xFF_FFFF)))
    return UInt32(truncatingIfNeeded: block.low & 0xFF_FFFF)
  }
}
