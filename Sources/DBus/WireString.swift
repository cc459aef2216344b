#if canImport(Glibc)
  import Glibc
#endif

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

  /// The byte at `offset` (below `count`).
  @inlinable public subscript(offset: Int) -> UInt8 {
    precondition(offset >= 0 && offset < count, "a byte outside the string")
    return UInt8(bitPattern: pointer[offset])
  }

  /// The bytes at `range` as a string of their own, in place (one type of a signature, such as
  /// a dictionary's value type). Not NUL-terminated: read it by `count`, as every use here does.
  public func slice(_ range: Range<Int>) -> WireString {
    precondition(range.lowerBound >= 0 && range.upperBound <= count, "a slice outside the string")
    return WireString(pointer: pointer + range.lowerBound, count: range.count)
  }

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

  /// Whether it starts with `name` (compared in place, like `equals`).
  @inlinable public func hasPrefix(_ name: WireName) -> Bool {
    name.count <= count && memcmp(pointer, name.start, name.count) == 0
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

/// A name the fast decoders compare wire strings with, made from a string literal
/// (`WireName("RSSI")`): its bytes live in the binary, so a comparison is a `memcmp` with no
/// allocation and no reference counting.
public struct WireName {
  @usableFromInline let start: UnsafePointer<UInt8>
  /// The length in bytes.
  public let count: Int

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
