/// Values of any type read in place: the same `DBusValue` that the generic path (`MessageReader`,
/// libdbus's type reader) builds, from a `WireReader`. A decoder that walks a large reply in place
/// (`GetManagedObjects`) uses it for the few values it keeps, and skips the rest without
/// allocating.
extension WireReader {
  /// D-Bus allows 32 nested arrays plus 32 nested structures; variants count too here.
  static let maximumDepth = 64

  /// One value of `type`, which must be one complete type (`a{sv}`, `(iu)`, `s`); nil when the
  /// bytes do not fit the type or the type is not one complete type.
  public mutating func value(ofType type: WireString) -> DBusValue? {
    value(ofType: type.bytes, depth: 0)
  }

  /// `v`: its signature, then its value, as `.variant(value)` (as `MessageReader` returns it).
  public mutating func variant() -> DBusValue? {
    variant(depth: 0)
  }

  /// Moves past one `v` without building its value; false when it does not fit.
  public mutating func skipVariant() -> Bool {
    skipVariant(depth: 0)
  }

  /// Moves past one value of `type` (one complete type); false when it does not fit.
  public mutating func skipValue(ofType type: WireString) -> Bool {
    var index = 0
    return skip(type.bytes, &index, depth: 0) && index == type.count
  }

  mutating func value(ofType type: UnsafeRawBufferPointer, depth: Int) -> DBusValue? {
    var index = 0
    guard let value = value(type, &index, depth: depth), index == type.count else { return nil }
    return value
  }

  mutating func variant(depth: Int) -> DBusValue? {
    guard depth < Self.maximumDepth, let inner = signature() else { return nil }
    return value(ofType: inner.bytes, depth: depth + 1).map { .variant($0) }
  }

  mutating func skipVariant(depth: Int) -> Bool {
    guard depth < Self.maximumDepth, let inner = signature() else { return false }
    var index = 0
    return skip(inner.bytes, &index, depth: depth + 1) && index == inner.count
  }

  /// The alignment of values whose type starts with `code`.
  public static func alignment(of code: UInt8) -> Int {
    switch code {
    case UInt8(ascii: "y"), UInt8(ascii: "g"), UInt8(ascii: "v"): 1
    case UInt8(ascii: "n"), UInt8(ascii: "q"): 2
    case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("), UInt8(ascii: "{"): 8
    default: 4
    }
  }

  /// Moves `index` past one complete type in `type`; false when there is none.
  static func skipType(_ type: UnsafeRawBufferPointer, _ index: inout Int, depth: Int = 0) -> Bool {
    guard depth < maximumDepth, index < type.count else { return false }
    let code = type[index]
    index += 1
    switch code {
    case UInt8(ascii: "a"): return skipType(type, &index, depth: depth + 1)
    case UInt8(ascii: "("), UInt8(ascii: "{"):
      let close = code == UInt8(ascii: "(") ? UInt8(ascii: ")") : UInt8(ascii: "}")
      var fields = 0
      while index < type.count, type[index] != close {
        guard skipType(type, &index, depth: depth + 1) else { return false }
        fields += 1
      }
      guard index < type.count, fields > 0, code == UInt8(ascii: "(") || fields == 2 else { return false }
      index += 1
      return true
    case UInt8(ascii: "y"), UInt8(ascii: "b"), UInt8(ascii: "n"), UInt8(ascii: "q"), UInt8(ascii: "i"),
      UInt8(ascii: "u"), UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "h"),
      UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"), UInt8(ascii: "v"):
      return true
    default: return false
    }
  }

  private static func text(_ type: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
    String(decoding: UnsafeRawBufferPointer(rebasing: type[range]), as: UTF8.self)
  }

  /// Reads the value of the complete type at `type[index...]`, moving `index` past that type.
  mutating func value(_ type: UnsafeRawBufferPointer, _ index: inout Int, depth: Int) -> DBusValue? {
    guard depth < Self.maximumDepth, index < type.count else { return nil }
    let code = type[index]
    index += 1
    switch code {
    case UInt8(ascii: "y"): return byte().map { .byte($0) }
    case UInt8(ascii: "b"): return uint32().map { .bool($0 != 0) }
    case UInt8(ascii: "n"): return int16().map { .int16($0) }
    case UInt8(ascii: "q"): return uint16().map { .uint16($0) }
    case UInt8(ascii: "i"): return int32().map { .int32($0) }
    case UInt8(ascii: "u"): return uint32().map { .uint32($0) }
    case UInt8(ascii: "x"): return fixed(Int64.self).map { .int64($0) }
    case UInt8(ascii: "t"): return fixed(UInt64.self).map { .uint64($0) }
    case UInt8(ascii: "d"): return fixed(UInt64.self).map { .double(Double(bitPattern: $0)) }
    // The index only, as `MessageReader` keeps it: the descriptor is never taken.
    case UInt8(ascii: "h"): return uint32().map { _ in .unixFD(-1) }
    case UInt8(ascii: "s"): return string().map { .string($0.string) }
    case UInt8(ascii: "o"): return string().map { .objectPath(ObjectPath($0.string)) }
    case UInt8(ascii: "g"): return signature().map { .signature(Signature($0.string)) }
    case UInt8(ascii: "v"): return variant(depth: depth + 1)
    case UInt8(ascii: "("):
      guard align(8) else { return nil }
      var fields: [DBusValue] = []
      while index < type.count, type[index] != UInt8(ascii: ")") {
        guard let field = value(type, &index, depth: depth + 1) else { return nil }
        fields.append(field)
      }
      guard index < type.count, !fields.isEmpty else { return nil }
      index += 1
      return .structure(fields)
    case UInt8(ascii: "a"):
      return array(type, &index, depth: depth + 1)
    default:
      return nil
    }
  }

  /// The rest of an array whose `a` was read: `index` is at its element type.
  private mutating func array(_ type: UnsafeRawBufferPointer, _ index: inout Int, depth: Int) -> DBusValue? {
    let elementStart = index
    var elementEnd = index
    guard Self.skipType(type, &elementEnd, depth: depth) else { return nil }
    index = elementEnd
    let element = type[elementStart]
    if element == UInt8(ascii: "y") { return bytes().map { .bytes($0) } }
    guard let end = beginArray(elementAlignment: Self.alignment(of: element)) else { return nil }
    if element == UInt8(ascii: "{") {
      // `{KV}`: K is one basic type; V is the rest before the closing brace.
      let keyRange = (elementStart + 1)..<(elementStart + 2)
      let valueRange = (elementStart + 2)..<(elementEnd - 1)
      var entries: [DBusValue.DictionaryEntry] = []
      while position < end {
        var entryIndex = elementStart + 1
        guard align(8), let key = value(type, &entryIndex, depth: depth + 1),
          let value = value(type, &entryIndex, depth: depth + 1)
        else { return nil }
        entries.append(.init(key, value))
      }
      guard position == end else { return nil }
      return .dictionary(
        key: Signature(Self.text(type, keyRange)), value: Signature(Self.text(type, valueRange)), entries)
    }
    var items: [DBusValue] = []
    while position < end {
      var itemIndex = elementStart
      guard let item = value(type, &itemIndex, depth: depth) else { return nil }
      items.append(item)
    }
    guard position == end else { return nil }
    return .array(element: Signature(Self.text(type, elementStart..<elementEnd)), items)
  }

  /// Moves past the value of the complete type at `type[index...]` without building it.
  mutating func skip(_ type: UnsafeRawBufferPointer, _ index: inout Int, depth: Int) -> Bool {
    guard depth < Self.maximumDepth, index < type.count else { return false }
    let code = type[index]
    switch code {
    case UInt8(ascii: "v"):
      index += 1
      return skipVariant(depth: depth + 1)
    case UInt8(ascii: "("):
      index += 1
      guard align(8) else { return false }
      var fields = 0
      while index < type.count, type[index] != UInt8(ascii: ")") {
        guard skip(type, &index, depth: depth + 1) else { return false }
        fields += 1
      }
      guard index < type.count, fields > 0 else { return false }
      index += 1
      return true
    case UInt8(ascii: "a"):
      index += 1
      let elementStart = index
      var elementEnd = index
      guard Self.skipType(type, &elementEnd, depth: depth + 1),
        let end = beginArray(elementAlignment: Self.alignment(of: type[elementStart]))
      else { return false }
      index = elementEnd
      let element = type[elementStart]
      // Fixed-size elements need no walk: the array's length says where it ends.
      if element == UInt8(ascii: "y") || element == UInt8(ascii: "n") || element == UInt8(ascii: "q")
        || element == UInt8(ascii: "i") || element == UInt8(ascii: "u") || element == UInt8(ascii: "x")
        || element == UInt8(ascii: "t") || element == UInt8(ascii: "d")
      {
        guard (end - position) % Self.alignment(of: element) == 0 else { return false }
        position = end
        return true
      }
      while position < end {
        var itemIndex = elementStart
        if element == UInt8(ascii: "{") {
          itemIndex += 1
          guard align(8), skip(type, &itemIndex, depth: depth + 1), skip(type, &itemIndex, depth: depth + 1)
          else { return false }
        } else {
          guard skip(type, &itemIndex, depth: depth + 1) else { return false }
        }
      }
      return position == end
    default:
      index += 1
      return skipBasic(code)
    }
  }
}
