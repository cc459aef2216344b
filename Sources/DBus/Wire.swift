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
  static func messageLength(_ bytes: UnsafeRawBufferPointer) throws(DBusError) -> Int? {
    guard bytes.count >= fixedHeaderLength else { return nil }
    let bigEndian: Bool
    switch bytes[0] {
    case UInt8(ascii: "l"): bigEndian = false
    case UInt8(ascii: "B"): bigEndian = true
    default: throw DBusError(.failed, "not a D-Bus message (endianness byte \(bytes[0]))")
    }
    let body = Int(load32(bytes, 4, bigEndian: bigEndian))
    let fields = Int(load32(bytes, 12, bigEndian: bigEndian))
    let total = fixedHeaderLength + ((fields + 7) & ~7) + body
    guard body <= maximumMessageLength, fields <= maximumMessageLength, total <= maximumMessageLength else {
      throw DBusError(.failed, "a D-Bus message of \(total) bytes is over the protocol's limit")
    }
    return total
  }

  static func load32(_ bytes: UnsafeRawBufferPointer, _ offset: Int, bigEndian: Bool) -> UInt32 {
    let value = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
    return bigEndian ? UInt32(bigEndian: value) : UInt32(littleEndian: value)
  }

  /// A message's header, read in place. `@usableFromInline` so that `WireSignal`'s accessors
  /// inline into a decoder in another module.
  @usableFromInline struct Header {
    @usableFromInline var type: UInt8
    @usableFromInline var serial: UInt32
    @usableFromInline var replySerial: UInt32?
    @usableFromInline var path: WireString?
    @usableFromInline var interface: WireString?
    @usableFromInline var member: WireString?
    @usableFromInline var errorName: WireString?
    @usableFromInline var sender: WireString?
    @usableFromInline var signature: WireString?
    @usableFromInline var bodyStart: Int
  }

  /// Reads the header of one complete message (`bytes` is exactly the message).
  static func header(_ bytes: UnsafeRawBufferPointer) -> Header? {
    guard bytes.count >= fixedHeaderLength, let base = bytes.baseAddress else { return nil }
    var reader = WireReader(base: base, count: bytes.count, bigEndian: bytes[0] == UInt8(ascii: "B"))
    let type = bytes[1]
    let fieldsLength = Int(load32(bytes, 12, bigEndian: reader.bigEndian))
    var header = Header(
      type: type, serial: load32(bytes, 8, bigEndian: reader.bigEndian), bodyStart: 0)
    reader.position = 16
    let fieldsEnd = 16 + fieldsLength
    guard fieldsEnd <= bytes.count else { return nil }
    while reader.position < fieldsEnd {
      guard reader.align(8), let code = reader.byte(), let signature = reader.signature(),
        signature.count == 1
      else { return nil }
      let kind = signature.first
      switch (code, kind) {
      case (1, UInt8(ascii: "o")): guard let value = reader.string() else { return nil }; header.path = value
      case (2, UInt8(ascii: "s")):
        guard let value = reader.string() else { return nil }; header.interface = value
      case (3, UInt8(ascii: "s")):
        guard let value = reader.string() else { return nil }; header.member = value
      case (4, UInt8(ascii: "s")):
        guard let value = reader.string() else { return nil }; header.errorName = value
      case (5, UInt8(ascii: "u")):
        guard let value = reader.uint32() else { return nil }; header.replySerial = value
      case (7, UInt8(ascii: "s")):
        guard let value = reader.string() else { return nil }; header.sender = value
      case (8, UInt8(ascii: "g")):
        guard let value = reader.signature() else { return nil }; header.signature = value
      default:
        // DESTINATION, UNIX_FDS and fields from later versions of the specification are skipped;
        // one of a type that cannot be skipped ends the fast read.
        guard reader.skipBasic(kind) else { return nil }
      }
    }
    guard reader.position == fieldsEnd else { return nil }
    reader.position = fieldsEnd
    guard reader.align(8) else { return nil }
    header.bodyStart = reader.position
    return header
  }
}

/// A string inside a received message: a pointer into the buffer (NUL-terminated, as on the
/// wire) and its length. Valid only while the decoder runs.
public struct WireString {
  @usableFromInline let pointer: UnsafePointer<CChar>
  public let count: Int

  @usableFromInline init(pointer: UnsafePointer<CChar>, count: Int) {
    self.pointer = pointer
    self.count = count
  }

  /// The first byte, if any.
  var first: UInt8? { count > 0 ? UInt8(bitPattern: pointer[0]) : nil }

  /// Compares without copying.
  public func equals(_ text: String) -> Bool {
    var text = text
    return text.withUTF8 { bytes in
      bytes.count == count && memcmp(pointer, bytes.baseAddress!, count) == 0
    }
  }

  /// Compares with a name known at compile time: a length check and a `memcmp`, nothing else
  /// (the `String` overload costs a `withUTF8` and its retain/release on every call).
  @inlinable public func equals(_ name: WireName) -> Bool {
    name.count == count && memcmp(pointer, name.start, count) == 0
  }

  /// The bytes, without the NUL.
  @inlinable public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: pointer, count: count) }

  /// A copy.
  public var string: String {
    String(decoding: UnsafeRawBufferPointer(start: pointer, count: count), as: UTF8.self)
  }
}

/// A name the fast decoders compare wire strings with, made from a string literal
/// (`WireName("RSSI")`): its bytes live in the binary, so a comparison is a `memcmp` with no
/// allocation and no reference counting.
public struct WireName {
  @usableFromInline let start: UnsafePointer<UInt8>
  @usableFromInline let count: Int

  @inlinable public init(_ text: StaticString) {
    precondition(text.hasPointerRepresentation, "a WireName is a string literal")
    start = text.utf8Start
    count = text.utf8CodeUnitCount
  }

  /// A copy, for tests and messages.
  public var string: String {
    String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
  }
}

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
/// `withPath`'s generic closure) through a thunk, about 250 instructions per signal (callgrind).
public struct WireSignal: ~Copyable {
  @usableFromInline let header: Wire.Header
  @usableFromInline let base: UnsafeRawPointer
  @usableFromInline let count: Int

  init(header: Wire.Header, bytes: UnsafeRawBufferPointer) {
    self.header = header
    self.base = bytes.baseAddress!
    self.count = bytes.count
  }

  public func interface(is name: InterfaceName) -> Bool { header.interface?.equals(name.rawValue) == true }
  @inlinable public func interface(is name: WireName) -> Bool { header.interface?.equals(name) == true }
  @inlinable public func member(is name: WireName) -> Bool { header.member?.equals(name) == true }
  @inlinable public func signature(is name: WireName) -> Bool {
    header.signature?.equals(name) ?? (name.count == 0)
  }
  public func member(is name: MemberName) -> Bool { header.member?.equals(name.rawValue) == true }
  /// The body's signature, such as `sa{sv}as`.
  public func signature(is text: String) -> Bool { (header.signature?.equals(text) ?? text.isEmpty) }
  /// Reads the object path in place.
  @inlinable public func withPath<T>(_ body: (WireString) -> T?) -> T? {
    guard let path = header.path else { return nil }
    return body(path)
  }
  /// A reader at the start of the body.
  @inlinable public var body: WireReader {
    var reader = WireReader(
      base: base, count: count, bigEndian: base.load(as: UInt8.self) == UInt8(ascii: "B"))
    reader.position = header.bodyStart
    return reader
  }
}

/// A received method reply as bytes, for decoders that read a large reply in place
/// (`Connection.call(…decoding:)`). Valid only during the decoder call.
public struct WireMessage: ~Copyable {
  let header: Wire.Header
  let base: UnsafeRawPointer
  let count: Int

  init(header: Wire.Header, bytes: UnsafeRawBufferPointer) {
    self.header = header
    self.base = bytes.baseAddress!
    self.count = bytes.count
  }

  /// Whether the body's signature is `name` (`a{oa{sa{sv}}}`).
  public func signature(is name: WireName) -> Bool { header.signature?.equals(name) ?? (name.count == 0) }
  /// The body's signature, for messages.
  public var signature: String { header.signature?.string ?? "" }
  /// The whole message's length in bytes.
  public var length: Int { count }
  /// A reader at the start of the body.
  public var body: WireReader {
    var reader = WireReader(
      base: base, count: count, bigEndian: base.load(as: UInt8.self) == UInt8(ascii: "B"))
    reader.position = header.bodyStart
    return reader
  }
}
