import CNettle

/// A 128-bit AES key: an Eddystone identity key, a temporary key derived from one, or an IRK.
///
/// The one owner of the key's bytes and of nettle's key schedule made from them. Both live in one
/// allocation that is wiped (`explicit_bzero`) before it is freed, and the key never prints:
/// `description`, `debugDescription` and `dump` all show `<redacted>`. Nothing can read the bytes
/// back out; the key is only ever used, through the operations below.
///
/// Immutable once made, and nettle's encryption only reads the schedule, so a key is shared
/// between threads safely.
public final class AES128Key: @unchecked Sendable {
  /// The key's length in bytes.
  public static let byteCount = 16

  /// The raw key, then nettle's `struct aes128_ctx` (the encryption schedule).
  private let storage: UnsafeMutableRawPointer
  private static let scheduleOffset = 16
  private static let allocationSize = scheduleOffset + MemoryLayout<aes128_ctx>.size

  private var rawKey: UnsafePointer<UInt8> {
    UnsafePointer(storage.assumingMemoryBound(to: UInt8.self))
  }
  private var schedule: UnsafeMutablePointer<aes128_ctx> {
    (storage + Self.scheduleOffset).assumingMemoryBound(to: aes128_ctx.self)
  }

  /// Takes the key's bytes with `fill`, which writes exactly 16 bytes, then expands the schedule.
  private init(filling fill: (UnsafeMutablePointer<UInt8>) -> Void) {
    storage = UnsafeMutableRawPointer.allocate(
      byteCount: Self.allocationSize, alignment: MemoryLayout<aes128_ctx>.alignment)
    storage.initializeMemory(as: UInt8.self, repeating: 0, count: Self.allocationSize)
    fill(storage.assumingMemoryBound(to: UInt8.self))
    // The corresponding C function is `aes128_set_encrypt_key`.
    nettle_aes128_set_encrypt_key(schedule, rawKey)
  }

  deinit {
    cnettle_wipe(storage, Self.allocationSize)
    storage.deallocate()
  }

  /// A key from its 16 bytes. The caller wipes its own copy.
  public convenience init(bytes: UnsafeRawBufferPointer) throws(KeyFormatError) {
    guard bytes.count == Self.byteCount else { throw KeyFormatError(.wrongByteCount(bytes.count)) }
    self.init { destination in
      for i in 0..<Self.byteCount { destination[i] = bytes[i] }
    }
  }

  /// A key from 32 hexadecimal digits (either case) as UTF-8 bytes, as a key file holds them;
  /// surrounding ASCII whitespace (a final newline) is allowed. The error says what is wrong
  /// without repeating any of the text. The caller wipes its own copy.
  public convenience init(hexUTF8 text: UnsafeRawBufferPointer) throws(KeyFormatError) {
    let digits = try Self.hexDigits(in: text).get()
    self.init { Self.decode(text, digits, into: $0) }
  }

  /// A key from 32 hexadecimal digits: for scenarios and tests, whose keys are not secret. A key
  /// file goes through `init(hexUTF8:)`, so that the reader can wipe what it read.
  public convenience init(hex: String) throws(KeyFormatError) {
    var utf8 = Array(hex.utf8)
    defer { utf8.withUnsafeMutableBytes { cnettle_wipe($0.baseAddress, $0.count) } }
    let digits = try utf8.withUnsafeBytes { Self.hexDigits(in: $0) }.get()
    self.init { destination in utf8.withUnsafeBytes { Self.decode($0, digits, into: destination) } }
  }

  /// Where the 32 digits are in `text`, or why it is not a key.
  private static func hexDigits(in text: UnsafeRawBufferPointer) -> Result<Range<Int>, KeyFormatError> {
    var start = 0
    var end = text.count
    while start < end, isSpace(text[start]) { start += 1 }
    while end > start, isSpace(text[end - 1]) { end -= 1 }
    guard end - start == 2 * byteCount else {
      // Counted as characters: UTF-8's continuation bytes (10xxxxxx) are not counted, so "é" is
      // one character, as an editor shows it, not two.
      let characters = (start..<end).count { text[$0] & 0xC0 != 0x80 }
      return .failure(KeyFormatError(.wrongDigitCount(characters)))
    }
    for i in start..<end where nibble(text[i]) == nil { return .failure(KeyFormatError(.notHexadecimal)) }
    return .success(start..<end)
  }

  private static func decode(
    _ text: UnsafeRawBufferPointer, _ digits: Range<Int>, into destination: UnsafeMutablePointer<UInt8>
  ) {
    for i in 0..<byteCount {
      destination[i] =
        nibble(text[digits.lowerBound + 2 * i])! << 4 | nibble(text[digits.lowerBound + 2 * i + 1])!
    }
  }

  /// The key that is this key's encryption of `block`: how Eddystone-EID derives its temporary
  /// key. The derived bytes are written straight into the new key's own storage.
  public func derive(encrypting block: AESBlock) -> AES128Key {
    AES128Key { destination in
      withUnsafeBytes(of: block.bigEndianBytes) { source in
        // The corresponding C function is `aes128_encrypt`.
        nettle_aes128_encrypt(
          schedule, Self.byteCount, destination, source.baseAddress!.assumingMemoryBound(to: UInt8.self))
      }
    }
  }

  /// One AES-128 block encryption (FIPS-197), bytes most significant first as every Bluetooth
  /// and Eddystone specification writes them. The corresponding C function is `aes128_encrypt`.
  public func encrypt(_ block: AESBlock) -> AESBlock {
    var output = AESBlock.Bytes(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    withUnsafeBytes(of: block.bigEndianBytes) { source in
      withUnsafeMutableBytes(of: &output) { destination in
        nettle_aes128_encrypt(
          schedule, Self.byteCount, destination.baseAddress!.assumingMemoryBound(to: UInt8.self),
          source.baseAddress!.assumingMemoryBound(to: UInt8.self))
      }
    }
    return AESBlock(bigEndianBytes: output)
  }

  /// AES-EAX encryption (nettle's `eax_aes128_*`) with a tag of `tagLength` bytes (1 to 16):
  /// what a beacon does for an encrypted TLM. Used by tests and simulated beacons.
  public func eaxSeal(
    nonce: [UInt8], header: [UInt8] = [], plaintext: [UInt8], tagLength: Int
  ) -> (ciphertext: [UInt8], tag: [UInt8]) {
    precondition((1...16).contains(tagLength), "an EAX tag is 1 to 16 bytes")
    var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
    var tag = [UInt8](repeating: 0, count: tagLength)
    withEAX(nonce: nonce, header: header) { context in
      ciphertext.withUnsafeMutableBufferPointer { out in
        plaintext.withUnsafeBufferPointer { input in
          // The corresponding C function is `eax_aes128_encrypt`.
          nettle_eax_aes128_encrypt(context, input.count, out.baseAddress, input.baseAddress)
        }
      }
      tag.withUnsafeMutableBufferPointer { nettle_eax_aes128_digest(context, tagLength, $0.baseAddress) }
    }
    return (ciphertext, tag)
  }

  /// AES-EAX decryption that returns the plaintext only when the tag verifies (compared in
  /// constant time, nettle's `memeql_sec`); nil otherwise. A tag may be truncated (1 to 16 bytes),
  /// as the encrypted TLM's 16-bit MIC is.
  public func eaxOpen(nonce: [UInt8], header: [UInt8] = [], ciphertext: [UInt8], tag: [UInt8]) -> [UInt8]? {
    guard (1...16).contains(tag.count) else { return nil }
    var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
    var computed = [UInt8](repeating: 0, count: tag.count)
    withEAX(nonce: nonce, header: header) { context in
      plaintext.withUnsafeMutableBufferPointer { out in
        ciphertext.withUnsafeBufferPointer { input in
          // The corresponding C function is `eax_aes128_decrypt`.
          nettle_eax_aes128_decrypt(context, input.count, out.baseAddress, input.baseAddress)
        }
      }
      computed.withUnsafeMutableBufferPointer { nettle_eax_aes128_digest(context, tag.count, $0.baseAddress) }
    }
    let equal = computed.withUnsafeBytes { a in
      tag.withUnsafeBytes { b in nettle_memeql_sec(a.baseAddress, b.baseAddress, tag.count) }
    }
    guard equal != 0 else {
      plaintext.withUnsafeMutableBytes { cnettle_wipe($0.baseAddress, $0.count) }
      return nil
    }
    return plaintext
  }

  /// Runs `body` with an EAX context keyed by this key, nonce and header set; the context (which
  /// holds a key schedule) is wiped afterwards.
  private func withEAX(
    nonce: [UInt8], header: [UInt8], _ body: (UnsafeMutablePointer<eax_aes128_ctx>) -> Void
  ) {
    let context = UnsafeMutablePointer<eax_aes128_ctx>.allocate(capacity: 1)
    defer {
      cnettle_wipe(context, MemoryLayout<eax_aes128_ctx>.size)
      context.deallocate()
    }
    // The corresponding C functions are `eax_aes128_set_key`, `eax_aes128_set_nonce` and
    // `eax_aes128_update` (the header, authenticated but not encrypted).
    nettle_eax_aes128_set_key(context, rawKey)
    nonce.withUnsafeBufferPointer { nettle_eax_aes128_set_nonce(context, $0.count, $0.baseAddress) }
    header.withUnsafeBufferPointer { nettle_eax_aes128_update(context, $0.count, $0.baseAddress) }
    body(context)
  }

  private static func isSpace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
  }

  private static func nibble(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: byte - 0x30
    case 0x41...0x46: byte - 0x41 + 10
    case 0x61...0x66: byte - 0x61 + 10
    default: nil
    }
  }
}

extension AES128Key: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
  public var description: String { "<redacted>" }
  public var debugDescription: String { "AES128Key(<redacted>)" }
  /// `dump` and the debugger's children: none, so no stored property is ever shown.
  public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
}

/// Why bytes are not an AES-128 key. The message never repeats the key material.
public struct KeyFormatError: Error, Equatable, Sendable, CustomStringConvertible {
  enum Code: Equatable, Sendable {
    case wrongByteCount(Int)
    case wrongDigitCount(Int)
    case notHexadecimal
  }
  let code: Code
  init(_ code: Code) { self.code = code }

  public var description: String {
    switch code {
    case .wrongByteCount(let n): "an AES-128 key is 16 bytes, not \(n)"
    case .wrongDigitCount(let n): "a key is 32 hexadecimal digits, not \(n) characters"
    case .notHexadecimal: "a key is 32 hexadecimal digits (0-9, a-f); this one has other characters"
    }
  }
}
