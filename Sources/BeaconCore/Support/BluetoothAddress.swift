/// A 48-bit Bluetooth device address, printed most significant byte first ("C0:FF:EE:00:00:01"),
/// as BlueZ and btmon print it.
///
/// Stored as one integer rather than a byte array: every advertisement and every tracked beacon
/// carries an address, and an array made each copy a reference count and each comparison a loop.
public struct BluetoothAddress: Hashable, Comparable, Sendable, CustomStringConvertible {
  /// The six bytes, most significant in bits 40–47. Comparing these integers compares the bytes
  /// lexicographically.
  private let value: UInt64

  /// The six bytes, most significant first.
  public var bytes: [UInt8] { (0..<6).map { UInt8(truncatingIfNeeded: value >> (40 - 8 * $0)) } }

  /// The six bytes as a 48-bit integer, most significant byte first; nil if higher bits are set.
  public init?(uint48 value: UInt64) {
    guard value >> 48 == 0 else { return nil }
    self.value = value
  }

  /// The six bytes as a 48-bit integer, most significant byte first.
  public var uint48: UInt64 { value }

  public init?(bytes: [UInt8]) {
    guard bytes.count == 6 else { return nil }
    value = bytes.reduce(0) { $0 << 8 | UInt64($1) }
  }

  /// Parses "AA:BB:CC:DD:EE:FF" (case-insensitive). `-` and `_` are accepted as separators, as in
  /// BlueZ object paths (`dev_AA_BB_CC_DD_EE_FF`).
  public init?(_ text: String) {
    let parts = text.split(whereSeparator: { $0 == ":" || $0 == "-" || $0 == "_" })
    guard parts.count == 6 else { return nil }
    var out: [UInt8] = []
    for part in parts {
      guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
      out.append(byte)
    }
    self.init(bytes: out)
  }

  public var description: String {
    bytes.map { Hex.byte($0) }.joined(separator: ":")
  }

  public static func < (lhs: BluetoothAddress, rhs: BluetoothAddress) -> Bool {
    lhs.value < rhs.value
  }
}
