#if canImport(Glibc)
  import Glibc
#endif

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
  /// The whole message as received, header and body: for a decoder that compares a message with
  /// one it saw before. Valid only during the decoder call, like the signal.
  @inlinable public func withBytes<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T {
    body(UnsafeRawBufferPointer(start: base, count: count))
  }
  /// Runs `body` over `bytes` read as one received message, as `SignalSocket` hands it to a
  /// decoder; nil unless they are exactly one message with a readable header. For tests and benchmarks of decoders.
  public static func withSignal<T>(_ bytes: UnsafeRawBufferPointer, _ body: (borrowing WireSignal) -> T) -> T?
  {
    guard let length = try? Wire.messageLength(bytes), length == bytes.count, let header = Wire.header(bytes)
    else { return nil }
    return body(WireSignal(header: header, bytes: bytes))
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
