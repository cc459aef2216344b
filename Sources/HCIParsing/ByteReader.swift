/// A bounds-checked cursor over received bytes. Every read checks the remaining length first and
/// returns nil when the input is too short, so no parser built on it reads past the buffer.
struct ByteReader {
  private let bytes: ArraySlice<UInt8>
  private(set) var offset: Int

  init(_ bytes: ArraySlice<UInt8>) {
    self.bytes = bytes
    self.offset = bytes.startIndex
  }

  /// Bytes left to read.
  var remaining: Int { bytes.endIndex - offset }

  /// How far the cursor is from the start of the input.
  var position: Int { offset - bytes.startIndex }

  mutating func u8() -> UInt8? {
    guard remaining >= 1 else { return nil }
    defer { offset += 1 }
    return bytes[offset]
  }

  /// A little-endian 16-bit value (HCI's byte order).
  mutating func u16le() -> UInt16? {
    guard remaining >= 2 else { return nil }
    defer { offset += 2 }
    return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
  }

  /// A big-endian 32-bit value (btsnoop's byte order).
  mutating func u32be() -> UInt32? {
    guard remaining >= 4 else { return nil }
    var value: UInt32 = 0
    for i in 0..<4 { value = value << 8 | UInt32(bytes[offset + i]) }
    offset += 4
    return value
  }

  /// A big-endian 64-bit value (btsnoop timestamps).
  mutating func u64be() -> UInt64? {
    guard remaining >= 8 else { return nil }
    var value: UInt64 = 0
    for i in 0..<8 { value = value << 8 | UInt64(bytes[offset + i]) }
    offset += 8
    return value
  }

  /// The next `count` bytes, or nil when fewer remain.
  mutating func bytes(_ count: Int) -> ArraySlice<UInt8>? {
    guard count >= 0, remaining >= count else { return nil }
    defer { offset += count }
    return bytes[offset..<(offset + count)]
  }

  /// Everything that is left.
  mutating func rest() -> ArraySlice<UInt8> {
    defer { offset = bytes.endIndex }
    return bytes[offset...]
  }
}
