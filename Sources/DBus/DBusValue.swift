/// One D-Bus value of any type, as read from or written to a message.
///
/// Containers carry their element signatures so that empty arrays and dictionaries still have a
/// wire type. `ay` is held as `.bytes` so that BlueZ's ManufacturerData and ServiceData values
/// are read and written as one fixed array, not byte by byte.
public indirect enum DBusValue: Hashable, Sendable {
  case byte(UInt8)
  case bool(Bool)
  case int16(Int16)
  case uint16(UInt16)
  case int32(Int32)
  case uint32(UInt32)
  case int64(Int64)
  case uint64(UInt64)
  case double(Double)
  case string(String)
  case objectPath(ObjectPath)
  case signature(Signature)
  /// A Unix file descriptor index; kept as read, never sent by this library.
  case unixFD(Int32)
  /// `ay`.
  case bytes([UInt8])
  /// `aT` for any element type other than `y` and dictionary entries.
  case array(element: Signature, [DBusValue])
  /// `a{KV}`: entries in wire order.
  case dictionary(key: Signature, value: Signature, [DictionaryEntry])
  /// `(…)`.
  case structure([DBusValue])
  /// `v`.
  case variant(DBusValue)

  /// One `{KV}` entry.
  public struct DictionaryEntry: Hashable, Sendable {
    public var key: DBusValue
    public var value: DBusValue
    public init(_ key: DBusValue, _ value: DBusValue) {
      self.key = key
      self.value = value
    }
  }

  /// The value's complete type signature.
  public var signature: Signature {
    switch self {
    case .byte: "y"
    case .bool: "b"
    case .int16: "n"
    case .uint16: "q"
    case .int32: "i"
    case .uint32: "u"
    case .int64: "x"
    case .uint64: "t"
    case .double: "d"
    case .string: "s"
    case .objectPath: "o"
    case .signature: "g"
    case .unixFD: "h"
    case .bytes: "ay"
    case .array(let element, _): Signature("a" + element.rawValue)
    case .dictionary(let key, let value, _): Signature("a{" + key.rawValue + value.rawValue + "}")
    case .structure(let fields): Signature("(" + fields.map(\.signature.rawValue).joined() + ")")
    case .variant: "v"
    }
  }
}

// MARK: - Building

extension DBusValue {
  /// `a{sv}` from a Swift dictionary, keys sorted for a stable wire order.
  public static func stringVariantDictionary(_ entries: [String: DBusValue]) -> DBusValue {
    .dictionary(
      key: "s", value: "v",
      entries.sorted { $0.key < $1.key }.map { DictionaryEntry(.string($0.key), .variant($0.value)) })
  }

  /// `as`.
  public static func stringArray(_ strings: [String]) -> DBusValue {
    .array(element: "s", strings.map { .string($0) })
  }
}

// MARK: - Reading

extension DBusValue {
  /// The value inside any number of variant wrappers.
  public var unwrapped: DBusValue {
    var value = self
    while case .variant(let inner) = value { value = inner }
    return value
  }

  public var string: String? {
    if case .string(let s) = unwrapped { return s }
    return nil
  }

  public var objectPath: ObjectPath? {
    if case .objectPath(let p) = unwrapped { return p }
    return nil
  }

  public var bool: Bool? {
    if case .bool(let b) = unwrapped { return b }
    return nil
  }

  /// Any integer type (`y n q i u x t`), when it fits in `Int`.
  public var int: Int? {
    switch unwrapped {
    case .byte(let v): Int(v)
    case .int16(let v): Int(v)
    case .uint16(let v): Int(v)
    case .int32(let v): Int(v)
    case .uint32(let v): Int(v)
    case .int64(let v): Int(v)
    case .uint64(let v): Int(exactly: v)
    default: nil
    }
  }

  public var uint16: UInt16? {
    if case .uint16(let v) = unwrapped { return v }
    return nil
  }

  public var int16: Int16? {
    if case .int16(let v) = unwrapped { return v }
    return nil
  }

  public var uint32: UInt32? {
    if case .uint32(let v) = unwrapped { return v }
    return nil
  }

  /// `ay` (or an `a` of `.byte` values).
  public var bytes: [UInt8]? {
    switch unwrapped {
    case .bytes(let b): return b
    case .array(_, let items):
      var out: [UInt8] = []
      for item in items {
        guard case .byte(let b) = item else { return nil }
        out.append(b)
      }
      return out
    default: return nil
    }
  }

  /// Elements of any array (`ay` gives `.byte` elements).
  public var arrayElements: [DBusValue]? {
    switch unwrapped {
    case .array(_, let items): items
    case .bytes(let b): b.map { .byte($0) }
    case .dictionary(_, _, let entries): entries.map { .structure([$0.key, $0.value]) }
    default: nil
    }
  }

  /// `as`.
  public var strings: [String]? {
    guard case .array(_, let items) = unwrapped else { return nil }
    var out: [String] = []
    out.reserveCapacity(items.count)
    for item in items {
      guard let s = item.string else { return nil }
      out.append(s)
    }
    return out
  }

  /// The entries of any dictionary.
  public var dictionaryEntries: [DictionaryEntry]? {
    if case .dictionary(_, _, let entries) = unwrapped { return entries }
    return nil
  }

  /// `a{sV}` keyed by string; values are returned as sent (a `v` stays `.variant`).
  public var stringKeyedDictionary: [String: DBusValue]? {
    guard let entries = dictionaryEntries else { return nil }
    var out: [String: DBusValue] = [:]
    out.reserveCapacity(entries.count)
    for entry in entries {
      guard let key = entry.key.string ?? entry.key.objectPath?.rawValue else { return nil }
      out[key] = entry.value
    }
    return out
  }

  /// `a{oV}` keyed by object path.
  public var objectPathKeyedDictionary: [ObjectPath: DBusValue]? {
    guard let entries = dictionaryEntries else { return nil }
    var out: [ObjectPath: DBusValue] = [:]
    for entry in entries {
      guard case .objectPath(let key) = entry.key else { return nil }
      out[key] = entry.value
    }
    return out
  }
}

// MARK: - Literals

extension DBusValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral {
  public init(stringLiteral value: String) { self = .string(value) }
  public init(booleanLiteral value: Bool) { self = .bool(value) }
}
