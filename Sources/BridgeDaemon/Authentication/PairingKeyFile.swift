import BeaconCore
import BeaconCrypto

/// A key file (`pair --eid-key-file`, `--irk-file`): 32 hex digits under the token-file rule
/// (`TokenFile.withKeyFile`). Errors name the file and what is wrong, never its text.
public enum PairingKeyFile {
  /// The key's 32 hex digits in lower case, as the store keeps them. The caller wipes the array
  /// (`SecretBytes.wipe`) once it is stored.
  public static func digits(_ path: String) throws(TokenFileError) -> [UInt8] {
    try TokenFile.withKeyFile(path) { (bytes) throws(TokenFileError) -> [UInt8] in
      // Some editors start a UTF-8 file with a byte order mark: invisible, and not a digit.
      if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
        throw TokenFileError(
          path: path, problem: "starts with a UTF-8 byte order mark (EF BB BF), which is not part of a key",
          fix: "save it without the byte order mark: only the key, 32 hex digits (16 bytes)")
      }
      do throws(KeyFormatError) { _ = try AES128Key(hexUTF8: bytes) } catch {
        throw TokenFileError(
          path: path, problem: "does not hold a key: \(error.description)",
          fix: "put only the key in it: 32 hex digits (16 bytes)")
      }
      var out = [UInt8](repeating: 0, count: 32)
      var n = 0
      for byte in bytes where n < 32 {
        let lower = byte | 0x20
        guard isLowerHexDigit(lower), !(0x09...0x0D).contains(byte), byte != 0x20 else { continue }
        out[n] = lower
        n += 1
      }
      return out
    }
  }

  static func isLowerHexDigit(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
      || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
  }

  /// The digits as the key they spell.
  static func key(_ digits: [UInt8]) -> AES128Key? {
    digits.withUnsafeBytes { try? AES128Key(hexUTF8: $0) }
  }
}
