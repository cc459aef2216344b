import CDBus

/// Owns one reference to a `DBusMessage`; `deinit` drops it, so no path leaks a message.
///
/// Internal on purpose: the public API deals only in `DBusValue`s and `Signal`s, so a
/// `DBusMessage*` never escapes the module.
///
/// `@unchecked Sendable`: a message is built on one thread and then only read or sent; libdbus
/// reference counts are atomic, and `dbus_connection_send` locks the message.
final class Message: @unchecked Sendable {
  let pointer: OpaquePointer

  /// Takes over a reference the caller already owns (from a `dbus_message_new_*` call).
  init(adopting pointer: OpaquePointer) { self.pointer = pointer }

  /// The corresponding C function is `dbus_message_unref`.
  deinit { dbus_message_unref(pointer) }

  /// A method call.
  /// The corresponding C function is `dbus_message_new_method_call`.
  static func methodCall(
    destination: BusName?, path: ObjectPath, interface: InterfaceName?, member: MemberName
  ) throws(DBusError) -> Message {
    try validate(path: path, interface: interface, member: member)
    if let destination { try check(dbus_validate_bus_name, destination.rawValue, "bus name") }
    guard
      let raw = dbus_message_new_method_call(
        destination?.rawValue, path.rawValue, interface?.rawValue, member.rawValue)
    else { throw DBusError(.noMemory, "dbus_message_new_method_call failed") }
    return Message(adopting: raw)
  }

  /// A signal, to every connection whose rules take it or to `destination` only.
  /// The corresponding C functions are `dbus_message_new_signal` and `dbus_message_set_destination`.
  static func signal(
    path: ObjectPath, interface: InterfaceName, member: MemberName, destination: BusName? = nil
  ) throws(DBusError) -> Message {
    try validate(path: path, interface: interface, member: member)
    if let destination { try check(dbus_validate_bus_name, destination.rawValue, "bus name") }
    guard let raw = dbus_message_new_signal(path.rawValue, interface.rawValue, member.rawValue) else {
      throw DBusError(.noMemory, "dbus_message_new_signal failed")
    }
    let message = Message(adopting: raw)
    if let destination, dbus_message_set_destination(raw, destination.rawValue) == 0 {
      throw DBusError(.noMemory, "dbus_message_set_destination failed")
    }
    return message
  }

  /// libdbus aborts the process on an invalid name (its "application bug" assertions): check
  /// first, and throw instead.
  /// The corresponding C functions are `dbus_validate_path`, `dbus_validate_interface` and
  /// `dbus_validate_member`.
  static func validate(path: ObjectPath, interface: InterfaceName?, member: MemberName) throws(DBusError) {
    try check(dbus_validate_path, path.rawValue, "object path")
    if let interface { try check(dbus_validate_interface, interface.rawValue, "interface name") }
    try check(dbus_validate_member, member.rawValue, "member name")
  }

  private static func check(
    _ validator: (UnsafePointer<CChar>?, UnsafeMutablePointer<CDBus.DBusError>?) -> dbus_bool_t,
    _ text: String,
    _ what: String
  ) throws(DBusError) {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    guard validator(text, &error) != 0 else {
      throw DBusError(consuming: &error, fallback: .invalidArgs, "invalid \(what) \"\(text)\"")
    }
  }

  /// Appends `values` as the message body.
  func append(_ values: [DBusValue]) throws(DBusError) {
    var iter = DBusMessageIter()
    dbus_message_iter_init_append(pointer, &iter)
    for value in values { try MessageWriter.append(value, to: &iter) }
  }

  var type: Int32 { dbus_message_get_type(pointer) }
}

/// Reads and writes message bodies.
enum TypeCode {
  static let invalid: Int32 = 0
  static let byte = Int32(UInt8(ascii: "y"))
  static let boolean = Int32(UInt8(ascii: "b"))
  static let int16 = Int32(UInt8(ascii: "n"))
  static let uint16 = Int32(UInt8(ascii: "q"))
  static let int32 = Int32(UInt8(ascii: "i"))
  static let uint32 = Int32(UInt8(ascii: "u"))
  static let int64 = Int32(UInt8(ascii: "x"))
  static let uint64 = Int32(UInt8(ascii: "t"))
  static let double = Int32(UInt8(ascii: "d"))
  static let string = Int32(UInt8(ascii: "s"))
  static let objectPath = Int32(UInt8(ascii: "o"))
  static let signature = Int32(UInt8(ascii: "g"))
  static let unixFD = Int32(UInt8(ascii: "h"))
  static let array = Int32(UInt8(ascii: "a"))
  static let variant = Int32(UInt8(ascii: "v"))
  static let `struct` = Int32(UInt8(ascii: "r"))
  static let dictEntry = Int32(UInt8(ascii: "e"))
}

enum MessageReader {
  /// A received signal, decoded.
  /// The corresponding C functions are `dbus_message_get_path` and friends.
  static func signal(of message: OpaquePointer) -> Signal {
    func text(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
    return Signal(
      sender: dbus_message_get_sender(message).map { BusName(String(cString: $0)) },
      path: ObjectPath(dbus_message_get_path(message).map { String(cString: $0) } ?? "/"),
      interface: InterfaceName(text(dbus_message_get_interface(message))),
      member: MemberName(text(dbus_message_get_member(message))), body: body(of: message))
  }

  /// Every value in a message body, in order.
  /// The corresponding C function is `dbus_message_iter_init`.
  static func body(of message: OpaquePointer) -> [DBusValue] {
    var iter = DBusMessageIter()
    guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
    return values(&iter)
  }

  /// Reads values until the end of the current container.
  static func values(_ iter: inout DBusMessageIter) -> [DBusValue] {
    var out: [DBusValue] = []
    while dbus_message_iter_get_arg_type(&iter) != TypeCode.invalid {
      if let value = value(&iter) { out.append(value) }
      dbus_message_iter_next(&iter)
    }
    return out
  }

  /// The full signature of the value under the iterator.
  /// The corresponding C function is `dbus_message_iter_get_signature`.
  static func signature(_ iter: inout DBusMessageIter) -> Signature {
    guard let raw = dbus_message_iter_get_signature(&iter) else { return "" }
    defer { dbus_free(raw) }
    return Signature(String(cString: raw))
  }

  /// The value under the iterator, without advancing it.
  /// The corresponding C function is `dbus_message_iter_get_basic`.
  static func value(_ iter: inout DBusMessageIter) -> DBusValue? {
    let type = dbus_message_iter_get_arg_type(&iter)
    var basic = DBusBasicValue()
    switch type {
    case TypeCode.byte:
      dbus_message_iter_get_basic(&iter, &basic)
      return .byte(basic.byt)
    case TypeCode.boolean:
      dbus_message_iter_get_basic(&iter, &basic)
      return .bool(basic.bool_val != 0)
    case TypeCode.int16:
      dbus_message_iter_get_basic(&iter, &basic)
      return .int16(basic.i16)
    case TypeCode.uint16:
      dbus_message_iter_get_basic(&iter, &basic)
      return .uint16(basic.u16)
    case TypeCode.int32:
      dbus_message_iter_get_basic(&iter, &basic)
      return .int32(basic.i32)
    case TypeCode.uint32:
      dbus_message_iter_get_basic(&iter, &basic)
      return .uint32(basic.u32)
    case TypeCode.int64:
      dbus_message_iter_get_basic(&iter, &basic)
      return .int64(Int64(basic.i64))
    case TypeCode.uint64:
      dbus_message_iter_get_basic(&iter, &basic)
      return .uint64(UInt64(basic.u64))
    case TypeCode.double:
      dbus_message_iter_get_basic(&iter, &basic)
      return .double(basic.dbl)
    case TypeCode.unixFD:
      // get_basic on a fd dup()s it; the index is all we keep, so we never take ownership.
      return .unixFD(-1)
    case TypeCode.string, TypeCode.objectPath, TypeCode.signature:
      dbus_message_iter_get_basic(&iter, &basic)
      let text = basic.str.map { String(cString: $0) } ?? ""
      switch type {
      case TypeCode.string: return .string(text)
      case TypeCode.objectPath: return .objectPath(ObjectPath(text))
      default: return .signature(Signature(text))
      }
    case TypeCode.variant:
      var sub = DBusMessageIter()
      dbus_message_iter_recurse(&iter, &sub)
      return value(&sub).map { .variant($0) }
    case TypeCode.struct:
      var sub = DBusMessageIter()
      dbus_message_iter_recurse(&iter, &sub)
      return .structure(values(&sub))
    case TypeCode.array:
      return array(&iter)
    default:
      return nil
    }
  }

  /// The corresponding C functions are `dbus_message_iter_recurse` and
  /// `dbus_message_iter_get_fixed_array`.
  static func array(_ iter: inout DBusMessageIter) -> DBusValue {
    let elementType = dbus_message_iter_get_element_type(&iter)
    var sub = DBusMessageIter()
    dbus_message_iter_recurse(&iter, &sub)
    if elementType == TypeCode.byte {
      var pointer: UnsafeRawPointer? = nil
      var count: Int32 = 0
      withUnsafeMutablePointer(to: &pointer) { dbus_message_iter_get_fixed_array(&sub, $0, &count) }
      guard let pointer, count > 0 else { return .bytes([]) }
      return .bytes(Array(UnsafeRawBufferPointer(start: pointer, count: Int(count))))
    }
    let full = signature(&iter).rawValue
    let element = Signature(String(full.dropFirst()))
    if elementType == TypeCode.dictEntry {
      // "a{KV}": K is one basic type code; V is the rest minus the closing brace.
      let inner = full.dropFirst(2).dropLast()
      let key = Signature(String(inner.prefix(1)))
      let value = Signature(String(inner.dropFirst()))
      var entries: [DBusValue.DictionaryEntry] = []
      while dbus_message_iter_get_arg_type(&sub) == TypeCode.dictEntry {
        var entry = DBusMessageIter()
        dbus_message_iter_recurse(&sub, &entry)
        let k = self.value(&entry)
        dbus_message_iter_next(&entry)
        let v = self.value(&entry)
        if let k, let v { entries.append(.init(k, v)) }
        dbus_message_iter_next(&sub)
      }
      return .dictionary(key: key, value: value, entries)
    }
    return .array(element: element, values(&sub))
  }
}

enum MessageWriter {
  /// Appends one value.
  /// The corresponding C functions are `dbus_message_iter_append_basic`,
  /// `dbus_message_iter_open_container` and `dbus_message_iter_close_container`.
  static func append(_ value: DBusValue, to iter: inout DBusMessageIter) throws(DBusError) {
    var ok: dbus_bool_t = 1
    switch value {
    case .byte(let v):
      var x = v
      ok = dbus_message_iter_append_basic(&iter, TypeCode.byte, &x)
    case .bool(let v):
      var x: dbus_bool_t = v ? 1 : 0
      ok = dbus_message_iter_append_basic(&iter, TypeCode.boolean, &x)
    case .int16(let v):
      var x = v
      ok = dbus_message_iter_append_basic(&iter, TypeCode.int16, &x)
    case .uint16(let v):
      var x = v
      ok = dbus_message_iter_append_basic(&iter, TypeCode.uint16, &x)
    case .int32(let v):
      var x = v
      ok = dbus_message_iter_append_basic(&iter, TypeCode.int32, &x)
    case .uint32(let v):
      var x = v
      ok = dbus_message_iter_append_basic(&iter, TypeCode.uint32, &x)
    case .int64(let v):
      var x = v
      ok = dbus_message_iter_append_basic(&iter, TypeCode.int64, &x)
    case .uint64(let v):
      var x = v
      ok = dbus_message_iter_append_basic(&iter, TypeCode.uint64, &x)
    case .double(let v):
      var x = v
      ok = dbus_message_iter_append_basic(&iter, TypeCode.double, &x)
    case .string(let s):
      ok = try appendString(s, type: TypeCode.string, to: &iter)
    case .objectPath(let p):
      guard _objectPathIsValid(p.rawValue) else {
        throw DBusError(.invalidArgs, "invalid object path \"\(p.rawValue)\"")
      }
      ok = try appendString(p.rawValue, type: TypeCode.objectPath, to: &iter)
    case .signature(let g):
      guard g.isValid else { throw DBusError(.invalidSignature, "invalid signature \"\(g.rawValue)\"") }
      ok = try appendString(g.rawValue, type: TypeCode.signature, to: &iter)
    case .unixFD:
      throw DBusError(.invalidArgs, "sending Unix file descriptors is not supported")
    case .bytes(let bytes):
      try container(TypeCode.array, "y", in: &iter) { (sub) throws(DBusError) in
        let ok = bytes.withUnsafeBufferPointer { buffer -> dbus_bool_t in
          var base = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)
          return dbus_message_iter_append_fixed_array(&sub, TypeCode.byte, &base, Int32(buffer.count))
        }
        if ok == 0 { throw DBusError(.noMemory, "dbus_message_iter_append_fixed_array failed") }
      }
    case .array(let element, let items):
      guard Signature("a" + element.rawValue).isValid else {
        throw DBusError(.invalidSignature, "invalid array element signature \"\(element.rawValue)\"")
      }
      try container(TypeCode.array, element.rawValue, in: &iter) { (sub) throws(DBusError) in
        for item in items {
          guard item.signature == element else {
            throw DBusError(.invalidArgs, "array of \(element) holds a \(item.signature)")
          }
          try append(item, to: &sub)
        }
      }
    case .dictionary(let key, let valueSignature, let entries):
      let element = "{" + key.rawValue + valueSignature.rawValue + "}"
      guard Signature("a" + element).isValid else {
        throw DBusError(.invalidSignature, "invalid dictionary signature \"a\(element)\"")
      }
      try container(TypeCode.array, element, in: &iter) { (sub) throws(DBusError) in
        for entry in entries {
          guard entry.key.signature == key, entry.value.signature == valueSignature else {
            throw DBusError(
              .invalidArgs, "dictionary a\(element) holds {\(entry.key.signature)\(entry.value.signature)}")
          }
          try container(TypeCode.dictEntry, nil, in: &sub) { (pair) throws(DBusError) in
            try append(entry.key, to: &pair)
            try append(entry.value, to: &pair)
          }
        }
      }
    case .structure(let fields):
      guard !fields.isEmpty else { throw DBusError(.invalidArgs, "empty structure") }
      try container(TypeCode.struct, nil, in: &iter) { (sub) throws(DBusError) in
        for field in fields { try append(field, to: &sub) }
      }
    case .variant(let inner):
      try container(TypeCode.variant, inner.signature.rawValue, in: &iter) { (sub) throws(DBusError) in
        try append(inner, to: &sub)
      }
    }
    if ok == 0 { throw DBusError(.noMemory, "dbus_message_iter_append_basic failed") }
  }

  private static func appendString(
    _ text: String, type: Int32, to iter: inout DBusMessageIter
  ) throws(DBusError) -> dbus_bool_t {
    // libdbus aborts the process on invalid UTF-8 or embedded NULs; Swift strings are valid
    // UTF-8, so only NUL needs checking.
    guard !text.utf8.contains(0) else { throw DBusError(.invalidArgs, "string contains a NUL byte") }
    return text.withCString { cString -> dbus_bool_t in
      var pointer: UnsafePointer<CChar>? = cString
      return dbus_message_iter_append_basic(&iter, type, &pointer)
    }
  }

  /// Opens a container, runs `body`, and closes it; on an error it abandons the container so that
  /// libdbus frees what it allocated.
  /// The corresponding C function is `dbus_message_iter_abandon_container`.
  private static func container(
    _ type: Int32, _ signature: String?, in iter: inout DBusMessageIter,
    _ body: (inout DBusMessageIter) throws(DBusError) -> Void
  ) throws(DBusError) {
    var sub = DBusMessageIter()
    let opened: dbus_bool_t =
      if let signature {
        signature.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) }
      } else {
        dbus_message_iter_open_container(&iter, type, nil, &sub)
      }
    guard opened != 0 else { throw DBusError(.noMemory, "dbus_message_iter_open_container failed") }
    do {
      try body(&sub)
    } catch {
      dbus_message_iter_abandon_container(&iter, &sub)
      throw error
    }
    guard dbus_message_iter_close_container(&iter, &sub) != 0 else {
      throw DBusError(.noMemory, "dbus_message_iter_close_container failed")
    }
  }
}

/// The corresponding C function is `dbus_signature_validate`.
func _signatureIsValid(_ text: String) -> Bool {
  !text.utf8.contains(0) && dbus_signature_validate(text, nil) != 0
}

/// The corresponding C function is `dbus_validate_path`.
func _objectPathIsValid(_ text: String) -> Bool {
  !text.utf8.contains(0) && dbus_validate_path(text, nil) != 0
}
