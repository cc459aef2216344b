#if canImport(Glibc)
  import Glibc
#endif

/// A cursor over a received message, reading values in wire order with the specification's
/// alignment (relative to the start of the message). Every read checks bounds and returns nil
/// when the value does not fit, so a decoder cannot read outside the message.
public struct WireReader {
  @usableFromInline let base: UnsafeRawPointer
  @usableFromInline let count: Int
  @usableFromInline let bigEndian: Bool
  /// The offset of the next value from the start of the message.
  public var position = 0

  @usableFromInline init(base: UnsafeRawPointer, count: Int, bigEndian: Bool) {
    self.base = base
    self.count = count
    self.bigEndian = bigEndian
  }

  /// Skips padding up to a multiple of `alignment` (1, 2, 4 or 8).
  @inlinable public mutating func align(_ alignment: Int) -> Bool {
    let aligned = (position + alignment - 1) & ~(alignment - 1)
    guard aligned <= count else { return false }
    position = aligned
    return true
  }

  @inlinable @inline(__always) mutating func fixed<T: FixedWidthInteger>(_: T.Type) -> T? {
    let size = MemoryLayout<T>.size
    guard align(size), position + size <= count else { return nil }
    let raw = base.loadUnaligned(fromByteOffset: position, as: T.self)
    position += size
    return bigEndian ? T(bigEndian: raw) : T(littleEndian: raw)
  }

  @inlinable @inline(__always) public mutating func byte() -> UInt8? { fixed(UInt8.self) }
  @inlinable @inline(__always) public mutating func int16() -> Int16? { fixed(Int16.self) }
  @inlinable @inline(__always) public mutating func uint16() -> UInt16? { fixed(UInt16.self) }
  @inlinable @inline(__always) public mutating func int32() -> Int32? { fixed(Int32.self) }
  @inlinable @inline(__always) public mutating func uint32() -> UInt32? { fixed(UInt32.self) }
  @inlinable @inline(__always) public mutating func int64() -> Int64? { fixed(Int64.self) }
  @inlinable @inline(__always) public mutating func uint64() -> UInt64? { fixed(UInt64.self) }

  /// `s` or `o`: a 32-bit length, the bytes, a NUL. Always inlined: the header reads four or
  /// five per signal, and the call cost as much as the read.
  @inlinable @inline(__always) public mutating func string() -> WireString? {
    guard let length = uint32().map(Int.init), length < count, position + length < count,
      base.load(fromByteOffset: position + length, as: UInt8.self) == 0
    else { return nil }
    let text = WireString(pointer: (base + position).assumingMemoryBound(to: CChar.self), count: length)
    position += length + 1
    return text
  }

  /// `g`: an 8-bit length, the bytes, a NUL.
  @inlinable @inline(__always) public mutating func signature() -> WireString? {
    guard let length = byte().map(Int.init), position + length < count,
      base.load(fromByteOffset: position + length, as: UInt8.self) == 0
    else { return nil }
    let text = WireString(pointer: (base + position).assumingMemoryBound(to: CChar.self), count: length)
    position += length + 1
    return text
  }

  /// Starts an array whose elements align to `alignment`; returns the offset where it ends.
  /// Read elements while `position` is below it.
  @inlinable @inline(__always) public mutating func beginArray(elementAlignment alignment: Int) -> Int? {
    guard let length = uint32().map(Int.init), length <= count, align(alignment), position + length <= count
    else {
      return nil
    }
    return position + length
  }

  /// `ay`, copied in one piece.
  public mutating func bytes() -> [UInt8]? {
    guard let end = beginArray(elementAlignment: 1) else { return nil }
    let out = Array(UnsafeRawBufferPointer(start: base + position, count: end - position))
    position = end
    return out
  }

  /// `ay`, in place: valid only while the decoder runs.
  @inlinable @inline(__always) public mutating func byteRange() -> UnsafeRawBufferPointer? {
    guard let end = beginArray(elementAlignment: 1) else { return nil }
    let out = UnsafeRawBufferPointer(start: base + position, count: end - position)
    position = end
    return out
  }

  /// Skips one value of a basic type; false for any other.
  mutating func skipBasic(_ code: UInt8?) -> Bool {
    switch code {
    case UInt8(ascii: "y"): return byte() != nil
    case UInt8(ascii: "n"), UInt8(ascii: "q"): return uint16() != nil
    case UInt8(ascii: "b"), UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "h"): return uint32() != nil
    case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"): return fixed(UInt64.self) != nil
    case UInt8(ascii: "s"), UInt8(ascii: "o"): return string() != nil
    case UInt8(ascii: "g"): return signature() != nil
    default: return false
    }
  }
}

/// A received signal as bytes, for decoders (see `Connection.subscribe(to:decoding:)` and
/// `SignalSocket`). Valid only during the decoder call.
///
/// Its accessors are inlinable: a decoder in another module called each of them (and
