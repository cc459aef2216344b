import CDBus

#if canImport(Glibc)
  import Glibc
#endif

/// A received signal as libdbus holds it, for decoders that read one kind of signal straight from
/// the wire instead of through `DBusValue` (see `Connection.subscribe(to:decoding:)`).
///
/// Valid only during the decoder call, on the reader thread: it borrows the `DBusMessage*`.
/// Header fields are compared as C strings, so a decoder that declines a message has allocated
/// nothing.
public struct RawSignal: ~Copyable {
  let pointer: OpaquePointer

  init(_ pointer: OpaquePointer) { self.pointer = pointer }

  /// The corresponding C function is `dbus_message_get_interface`.
  public func interface(is name: InterfaceName) -> Bool {
    Self.equal(dbus_message_get_interface(pointer), name.rawValue)
  }

  /// The corresponding C function is `dbus_message_get_member`.
  public func member(is name: MemberName) -> Bool {
    Self.equal(dbus_message_get_member(pointer), name.rawValue)
  }

  /// The object path, as a Swift value (one allocation).
  /// The corresponding C function is `dbus_message_get_path`.
  public var path: ObjectPath {
    ObjectPath(dbus_message_get_path(pointer).map { String(cString: $0) } ?? "/")
  }

  /// An iterator at the first argument.
  /// The corresponding C function is `dbus_message_iter_init`.
  public var arguments: MessageIterator {
    var iterator = MessageIterator()
    if dbus_message_iter_init(pointer, &iterator.raw) == 0 { iterator.atEnd = true }
    return iterator
  }

  /// `path` is `namespace` or below it (`path_namespace` in a match rule).
  static func isPath(_ path: UnsafePointer<CChar>?, inNamespace namespace: String) -> Bool {
    guard let path else { return false }
    if namespace == "/" { return true }
    var namespace = namespace
    return namespace.withUTF8 { bytes in
      bytes.withMemoryRebound(to: CChar.self) { chars in
        strncmp(path, chars.baseAddress!, chars.count) == 0
          && (path[chars.count] == 0 || path[chars.count] == CChar(UInt8(ascii: "/")))
      }
    }
  }

  static func equal(_ text: UnsafePointer<CChar>?, _ expected: String) -> Bool {
    guard let text else { return false }
    var expected = expected
    return expected.withUTF8 { bytes in
      bytes.withMemoryRebound(to: CChar.self) { chars in
        strncmp(text, chars.baseAddress!, chars.count) == 0 && text[chars.count] == 0
      }
    }
  }
}

/// A cursor over a message's arguments, or over the contents of one container, read without
/// building `DBusValue`s. Reading a value of another type than asked returns nil, so a decoder
/// checks the wire types as it goes.
///
/// Copy it to read ahead: a copy is an independent cursor over the same message.
public struct MessageIterator {
  var raw = DBusMessageIter()
  var atEnd = false

  /// The type code of the current value (`UInt8(ascii: "s")`, …), or 0 at the end.
  /// The corresponding C function is `dbus_message_iter_get_arg_type`.
  public var typeCode: UInt8 {
    if atEnd { return 0 }
    var copy = raw
    return UInt8(truncatingIfNeeded: dbus_message_iter_get_arg_type(&copy))
  }

  /// The element type code of the current array.
  /// The corresponding C function is `dbus_message_iter_get_element_type`.
  public var elementTypeCode: UInt8 {
    if atEnd { return 0 }
    var copy = raw
    return UInt8(truncatingIfNeeded: dbus_message_iter_get_element_type(&copy))
  }

  /// Moves to the next value; false at the end.
  /// The corresponding C function is `dbus_message_iter_next`.
  @discardableResult
  public mutating func next() -> Bool {
    if atEnd { return false }
    if dbus_message_iter_next(&raw) == 0 { atEnd = true }
    return !atEnd
  }

  /// Into the current container (array, variant, struct, dict entry); nil if it is not one.
  /// The corresponding C function is `dbus_message_iter_recurse`.
  public func contents() -> MessageIterator? {
    switch typeCode {
    case UInt8(ascii: "a"), UInt8(ascii: "v"), UInt8(ascii: "r"), UInt8(ascii: "e"):
      var copy = raw
      var inner = MessageIterator()
      dbus_message_iter_recurse(&copy, &inner.raw)
      inner.atEnd = dbus_message_iter_get_arg_type(&inner.raw) == TypeCode.invalid
      return inner
    default:
      return nil
    }
  }

  private func basic(_ code: UInt8) -> DBusBasicValue? {
    guard typeCode == code else { return nil }
    var copy = raw
    var value = DBusBasicValue()
    dbus_message_iter_get_basic(&copy, &value)
    return value
  }

  /// The corresponding C function is `dbus_message_iter_get_basic`.
  public var int16: Int16? { basic(UInt8(ascii: "n"))?.i16 }
  public var uint16: UInt16? { basic(UInt8(ascii: "q"))?.u16 }
  public var int32: Int32? { basic(UInt8(ascii: "i"))?.i32 }
  public var bool: Bool? { basic(UInt8(ascii: "b")).map { $0.bool_val != 0 } }

  /// Whether the current value is the string (or object path) `text`, compared without copying.
  public func isString(_ text: String) -> Bool {
    let code = typeCode
    guard code == UInt8(ascii: "s") || code == UInt8(ascii: "o"), let value = basic(code) else {
      return false
    }
    return RawSignal.equal(value.str, text)
  }

  /// The current string or object path, copied.
  public var string: String? {
    let code = typeCode
    guard code == UInt8(ascii: "s") || code == UInt8(ascii: "o"), let value = basic(code)?.str else {
      return nil
    }
    return String(cString: value)
  }

  /// The current `ay`, copied in one piece; nil for any other type.
  /// The corresponding C function is `dbus_message_iter_get_fixed_array`.
  public var bytes: [UInt8]? {
    guard typeCode == UInt8(ascii: "a"), elementTypeCode == UInt8(ascii: "y") else { return nil }
    var copy = raw
    var inner = DBusMessageIter()
    dbus_message_iter_recurse(&copy, &inner)
    var pointer: UnsafeRawPointer? = nil
    var count: Int32 = 0
    withUnsafeMutablePointer(to: &pointer) { dbus_message_iter_get_fixed_array(&inner, $0, &count) }
    guard let pointer, count > 0 else { return [] }
    return Array(UnsafeRawBufferPointer(start: pointer, count: Int(count)))
  }
}
