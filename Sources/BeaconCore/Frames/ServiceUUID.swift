/// A Bluetooth service UUID, held in its 128-bit form. 16- and 32-bit UUIDs are expanded over the
/// Bluetooth Base UUID 0000xxxx-0000-1000-8000-00805F9B34FB (Core Specification Vol 3, Part B,
/// 2.5.1).
public struct ServiceUUID: Hashable, Sendable, CustomStringConvertible {
  /// The 16 bytes, big-endian (as the UUID string reads).
  public let bytes: [UInt8]

  private static let baseTail: [UInt8] = [
    0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB,
  ]

  public init(uuid16: UInt16) {
    bytes = [0, 0, UInt8(uuid16 >> 8), UInt8(uuid16 & 0xFF)] + Self.baseTail
  }

  public init(uuid32: UInt32) {
    bytes =
      [UInt8(uuid32 >> 24), UInt8((uuid32 >> 16) & 0xFF), UInt8((uuid32 >> 8) & 0xFF), UInt8(uuid32 & 0xFF)]
      + Self.baseTail
  }

  /// From 16 big-endian bytes.
  public init?(bytes: [UInt8]) {
    guard bytes.count == 16 else { return nil }
    self.bytes = bytes
  }

  /// Parses "0000feaa-0000-1000-8000-00805f9b34fb" (BlueZ's form), or a bare 16-bit "feaa" or
  /// 32-bit "0000feaa". Anything but hex digits and dashes is refused (`UInt16("+abc", radix: 16)`
  /// would accept a sign).
  public init?(_ text: String) {
    let digits = text.utf8.filter { $0 != UInt8(ascii: "-") }
    guard digits.allSatisfy(Self.isHexDigit), let raw = Hex.decode(String(decoding: digits, as: UTF8.self))
    else { return nil }
    switch raw.count {
    case 2: self.init(uuid16: UInt16(raw[0]) << 8 | UInt16(raw[1]))
    case 4: self.init(uuid32: raw.reduce(0) { $0 << 8 | UInt32($1) })
    case 16: self.init(bytes: raw)
    default: return nil
    }
  }

  private static func isHexDigit(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
      UInt8(ascii: "A")...UInt8(ascii: "F"):
      true
    default: false
    }
  }

  /// Whether this UUID is on the Bluetooth Base UUID, so that it can travel as 16 or 32 bits.
  var isOnBase: Bool { Array(bytes[4...]) == Self.baseTail }

  /// The 16-bit alias, when this UUID is on the Bluetooth Base UUID.
  public var uuid16: UInt16? {
    guard bytes[0] == 0, bytes[1] == 0, isOnBase else { return nil }
    return UInt16(bytes[2]) << 8 | UInt16(bytes[3])
  }

  /// Lower-case 8-4-4-4-12 form, as BlueZ prints it.
  public var description: String {
    let hex = Hex.encode(bytes).lowercased()
    let chars = Array(hex)
    return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(chars[$0]) }.joined(separator: "-")
  }

  /// Eddystone's service, 0xFEAA.
  public static let eddystone = ServiceUUID(uuid16: 0xFEAA)
}
