/// Hex encoding and decoding for byte strings in scenario files, logs and JSON output.
public enum Hex {
  private static let digits = Array("0123456789ABCDEF".utf8)

  /// Two upper-case hex digits.
  public static func byte(_ value: UInt8) -> String {
    String(decoding: [digits[Int(value >> 4)], digits[Int(value & 0x0F)]], as: UTF8.self)
  }

  /// Upper-case hex, no separators.
  public static func encode(_ bytes: some Sequence<UInt8>) -> String {
    var out: [UInt8] = []
    for value in bytes {
      out.append(digits[Int(value >> 4)])
      out.append(digits[Int(value & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// Decodes hex digits, ignoring spaces, colons and dashes between bytes. Returns nil for an odd
  /// number of digits or a character that is not a hex digit.
  public static func decode(_ text: String) -> [UInt8]? {
    var out: [UInt8] = []
    var high: UInt8?
    for scalar in text.utf8 {
      let nibble: UInt8
      switch scalar {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = scalar - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = scalar - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = scalar - UInt8(ascii: "A") + 10
      case UInt8(ascii: " "), UInt8(ascii: ":"), UInt8(ascii: "-"):
        if high != nil { return nil }
        continue
      default: return nil
      }
      if let h = high {
        out.append(h << 4 | nibble)
        high = nil
      } else {
        high = nibble
      }
    }
    return high == nil ? out : nil
  }
}
