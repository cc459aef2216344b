/// One 16-byte AES block, as two big-endian halves: byte 0 is the most significant byte of
/// `high`, as the Eddystone and Bluetooth specifications write their blocks (MSB first).
public struct AESBlock: Hashable, Sendable {
  public var high: UInt64
  public var low: UInt64

  public init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }

  /// A block from exactly 16 bytes; nil for any other count.
  public init?(bytes: some Collection<UInt8>) {
    guard bytes.count == 16 else { return nil }
    var high: UInt64 = 0
    var low: UInt64 = 0
    for (i, byte) in bytes.enumerated() {
      if i < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
    }
    self.init(high: high, low: low)
  }

  /// The 16 bytes in order, for nettle.
  typealias Bytes = (
    UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
    UInt8
  )

  var bigEndianBytes: (UInt64, UInt64) { (high.bigEndian, low.bigEndian) }

  init(bigEndianBytes bytes: Bytes) {
    let halves = withUnsafeBytes(of: bytes) {
      ($0.load(as: UInt64.self), $0.load(fromByteOffset: 8, as: UInt64.self))
    }
    self.init(high: UInt64(bigEndian: halves.0), low: UInt64(bigEndian: halves.1))
  }

  /// The 16 bytes, most significant first.
  public var bytes: [UInt8] {
    (0..<16).map { i in UInt8(truncatingIfNeeded: (i < 8 ? high : low) >> (56 - 8 * (i % 8))) }
  }
}
