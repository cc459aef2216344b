#if canImport(Glibc)
  import Glibc
#endif

/// The D-Bus wire format, read in place (D-Bus specification, "Message Format").
///
/// For the one signal a scanner receives thousands of times a second, building a `DBusValue`
/// tree (or walking libdbus's type reader) costs more than everything else the scan does. A
/// decoder reads that signal's body straight from the received bytes with a `WireReader`; every
/// read is bounds-checked and returns nil on anything unexpected, and the caller then falls back
/// to the generic path.
public enum Wire {
  /// The fixed part of every message: endianness, type, flags, version, body length, serial,
  /// and the header fields' array length.
  static let fixedHeaderLength = 16
  /// DBUS_MAXIMUM_MESSAGE_LENGTH.
  static let maximumMessageLength = 1 << 27

  enum MessageType: UInt8 {
    case methodCall = 1
    case methodReturn = 2
    case error = 3
    case signal = 4
  }

  /// The whole length of the message starting at `bytes`, once 16 bytes are there; nil if fewer
  /// are. Throws on a header no bus would send.
  /// Always inlined into the framing loop; the errors are made out of line.
  @inline(__always) static func messageLength(_ bytes: UnsafeRawBufferPointer) throws(DBusError) -> Int? {
    guard bytes.count >= fixedHeaderLength else { return nil }
    let bigEndian: Bool
    switch bytes[0] {
    case UInt8(ascii: "l"): bigEndian = false
    case UInt8(ascii: "B"): bigEndian = true
    default: throw notAMessage(bytes[0])
    }
    let body = Int(load32(bytes, 4, bigEndian: bigEndian))
    let fields = Int(load32(bytes, 12, bigEndian: bigEndian))
    let total = fixedHeaderLength + ((fields + 7) & ~7) + body
    guard body <= maximumMessageLength, fields <= maximumMessageLength, total <= maximumMessageLength else {
      throw overLimit(total)
    }
    return total
  }

  @inline(never) static func notAMessage(_ byte: UInt8) -> DBusError {
    DBusError(.failed, "not a D-Bus message (endianness byte \(byte))")
  }

  @inline(never) static func overLimit(_ total: Int) -> DBusError {
    DBusError(.failed, "a D-Bus message of \(total) bytes is over the protocol's limit")
  }

  /// Whether `count` bytes at `a` and `b` are equal: eight at a time, inline. Names in a header
  /// are 4 to 40 bytes long, and a call to `memcmp` cost more than the comparison itself (its
  /// PLT call and the registers saved around it).
  @inlinable @inline(__always) static func same(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int)
    -> Bool
  {
    if count >= 8 {
      var offset = 0
      while offset &+ 8 < count {
        guard
          a.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            == b.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        else { return false }
        offset &+= 8
      }
      // The last eight, overlapping the words before.
      return a.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
        == b.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
    }
    var offset = 0
    while offset < count {
      guard a.load(fromByteOffset: offset, as: UInt8.self) == b.load(fromByteOffset: offset, as: UInt8.self)
      else { return false }
      offset &+= 1
    }
    return true
  }

  static func load32(_ bytes: UnsafeRawBufferPointer, _ offset: Int, bigEndian: Bool) -> UInt32 {
    let value = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
    return bigEndian ? UInt32(bigEndian: value) : UInt32(littleEndian: value)
  }

  /// A message's header, read in place. `@usableFromInline` so that `WireSignal`'s accessors
  /// inline into a decoder in another module.
  ///
  /// Compact on purpose: the reader thread builds one per signal and hands it on by value, so
  /// each string field is where it starts and how long it is (`Span`, 8 bytes), not a
  /// `WireString?` (17 bytes and a tag), and the optional views are made only when asked for.
  @usableFromInline struct Header {
    @usableFromInline let base: UnsafeRawPointer
    @usableFromInline var type: UInt8
    @usableFromInline var serial: UInt32
    @usableFromInline var replySerial: UInt32?
    @usableFromInline var pathSpan = Span()
    @usableFromInline var interfaceSpan = Span()
    @usableFromInline var memberSpan = Span()
    @usableFromInline var errorNameSpan = Span()
    @usableFromInline var senderSpan = Span()
    @usableFromInline var signatureSpan = Span()
    @usableFromInline var bodyStart: Int

    init(base: UnsafeRawPointer, type: UInt8, serial: UInt32) {
      self.base = base
      self.type = type
      self.serial = serial
      self.bodyStart = 0
    }

    @inlinable var path: WireString? { pathSpan.string(base) }
    @inlinable var interface: WireString? { interfaceSpan.string(base) }
    @inlinable var member: WireString? { memberSpan.string(base) }
    @inlinable var errorName: WireString? { errorNameSpan.string(base) }
    @inlinable var sender: WireString? { senderSpan.string(base) }
    @inlinable var signature: WireString? { signatureSpan.string(base) }
  }

  /// A string header field: the offset of its first byte in the message (never 0, where the
  /// fixed header is; 0 means absent) and its length without the NUL.
  @usableFromInline struct Span {
    @usableFromInline var at: UInt32 = 0
    @usableFromInline var count: UInt32 = 0

    init() {}

    init(at: Int, count: Int) {
      self.at = UInt32(truncatingIfNeeded: at)
      self.count = UInt32(truncatingIfNeeded: count)
    }

    @inlinable var isPresent: Bool { at != 0 }

    @inlinable func string(_ base: UnsafeRawPointer) -> WireString? {
      guard at != 0 else { return nil }
      return WireString(
        pointer: (base + Int(at)).assumingMemoryBound(to: CChar.self), count: Int(count))
    }
  }

  /// A header field's code, its one-character signature and the signature's NUL, as the four
  /// bytes that start every field (read as one little-endian word).
  private static func fieldWord(_ code: UInt8, _ kind: Unicode.Scalar) -> UInt32 {
    UInt32(code) | 1 << 8 | UInt32(UInt8(ascii: kind)) << 16
  }

  /// Reads the header of one complete message (`bytes` is exactly the message).
  ///
  /// Each field starts 8-aligned with its code, a signature of one type and the NUL: those four
  /// bytes are read and told apart as one word, and the value after them (a string, a
  /// signature, or a `u`) read straight. Any other field's value is skipped by a `WireReader`.
  /// The same checks as reading it value by value (Fuzz/dbus-wire compares the two). Always
  /// inlined: returned from a call, the header went through memory as an optional and was
  /// zeroed, filled and copied again (about 80 instructions per signal).
  @inline(__always) static func header(_ bytes: UnsafeRawBufferPointer) -> Header? {
    guard bytes.count >= fixedHeaderLength, let base = bytes.baseAddress else { return nil }
    let count = bytes.count
    let bigEndian = bytes[0] == UInt8(ascii: "B")
    let fieldsLength = Int(load32(bytes, 12, bigEndian: bigEndian))
    var header = Header(base: base, type: bytes[1], serial: load32(bytes, 8, bigEndian: bigEndian))
    let fieldsEnd = fixedHeaderLength + fieldsLength
    guard fieldsEnd <= count else { return nil }
    var position = fixedHeaderLength
    while position < fieldsEnd {
      position = (position + 7) & ~7
      guard position + 4 <= count else { return nil }
      let word = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: position, as: UInt32.self))
      // A signature of exactly one type, then its NUL.
      guard word & 0xFF00_FF00 == 0x0000_0100 else { return nil }
      position += 4
      // The fields a signal carries, by their whole word (one decision, not one on the type
      // and another on the code); any other field by its type.
      switch word {
      case fieldWord(1, "o"):
        guard let span = stringSpan(bytes, &position, bigEndian: bigEndian) else { return nil }
        header.pathSpan = span
      case fieldWord(2, "s"):
        guard let span = stringSpan(bytes, &position, bigEndian: bigEndian) else { return nil }
        header.interfaceSpan = span
      case fieldWord(3, "s"):
        guard let span = stringSpan(bytes, &position, bigEndian: bigEndian) else { return nil }
        header.memberSpan = span
      case fieldWord(7, "s"):
        guard let span = stringSpan(bytes, &position, bigEndian: bigEndian) else { return nil }
        header.senderSpan = span
      case fieldWord(8, "g"):
        guard let span = signatureSpan(bytes, &position) else { return nil }
        header.signatureSpan = span
      case fieldWord(4, "s"):
        guard let span = stringSpan(bytes, &position, bigEndian: bigEndian) else { return nil }
        header.errorNameSpan = span
      case fieldWord(5, "u"):
        guard position + 4 <= count else { return nil }
        header.replySerial = load32(bytes, position, bigEndian: bigEndian)
        position += 4
      default:
        switch UInt8(truncatingIfNeeded: word >> 16) {
        case UInt8(ascii: "s"), UInt8(ascii: "o"):
          guard stringSpan(bytes, &position, bigEndian: bigEndian) != nil else { return nil }
        case UInt8(ascii: "g"):
          guard signatureSpan(bytes, &position) != nil else { return nil }
        case let kind:
          // DESTINATION's siblings of other basic types and fields from later versions of the
          // specification are skipped; one of a type that cannot be skipped ends the fast read.
          var reader = WireReader(base: base, count: count, bigEndian: bigEndian)
          reader.position = position
          guard reader.skipBasic(kind) else { return nil }
          position = reader.position
        }
      }
    }
    guard position == fieldsEnd else { return nil }
    position = (position + 7) & ~7
    guard position <= count else { return nil }
    header.bodyStart = position
    return header
  }
  /// `s` or `o` at `position` (4-aligned already: the field started 8-aligned), moving past it.
  @inline(__always) private static func stringSpan(
    _ bytes: UnsafeRawBufferPointer, _ position: inout Int, bigEndian: Bool
  ) -> Span? {
    let count = bytes.count
    guard position + 4 <= count else { return nil }
    let length = Int(load32(bytes, position, bigEndian: bigEndian))
    let start = position + 4
    guard length < count, start + length < count, bytes[start + length] == 0 else { return nil }
    position = start + length + 1
    return Span(at: start, count: length)
  }

  /// `g` at `position`, moving past it.
  @inline(__always) private static func signatureSpan(_ bytes: UnsafeRawBufferPointer, _ position: inout Int)
    -> Span?
  {
    let count = bytes.count
    guard position < count else { return nil }
    let length = Int(bytes[position])
    let start = position + 1
    guard start + length < count, bytes[start + length] == 0 else { return nil }
    position = start + length + 1
    return Span(at: start, count: length)
  }
}
