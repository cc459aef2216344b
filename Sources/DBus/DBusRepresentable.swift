/// A Swift type with a fixed D-Bus signature, for typed arguments and replies.
///
/// ```swift
/// let owner = try await bus.call(
///   destination: .bus, path: "/org/freedesktop/DBus", interface: .bus, member: "GetNameOwner",
///   ["org.bluez"], returning: String.self)
/// ```
public protocol DBusRepresentable: Sendable {
  /// The wire signature, e.g. `s` or `a{sv}`.
  static var dbusSignature: Signature { get }
  /// Decodes a value of exactly this type (any variant wrappers removed first).
  init?(dbusValue: DBusValue)
  var dbusValue: DBusValue { get }
}

extension Bool: DBusRepresentable {
  public static var dbusSignature: Signature { "b" }
  public init?(dbusValue: DBusValue) {
    guard case .bool(let v) = dbusValue.unwrapped else { return nil }
    self = v
  }
  public var dbusValue: DBusValue { .bool(self) }
}

extension UInt8: DBusRepresentable {
  public static var dbusSignature: Signature { "y" }
  public init?(dbusValue: DBusValue) {
    guard case .byte(let v) = dbusValue.unwrapped else { return nil }
    self = v
  }
  public var dbusValue: DBusValue { .byte(self) }
}

extension Int16: DBusRepresentable {
  public static var dbusSignature: Signature { "n" }
  public init?(dbusValue: DBusValue) {
    guard case .int16(let v) = dbusValue.unwrapped else { return nil }
    self = v
  }
  public var dbusValue: DBusValue { .int16(self) }
}

extension UInt16: DBusRepresentable {
  public static var dbusSignature: Signature { "q" }
  public init?(dbusValue: DBusValue) {
    guard case .uint16(let v) = dbusValue.unwrapped else { return nil }
    self = v
  }
  public var dbusValue: DBusValue { .uint16(self) }
}

extension Int32: DBusRepresentable {
  public static var dbusSignature: Signature { "i" }
  public init?(dbusValue: DBusValue) {
    guard case .int32(let v) = dbusValue.unwrapped else { return nil }
    self = v
  }
  public var dbusValue: DBusValue { .int32(self) }
}

extension UInt32: DBusRepresentable {
  public static var dbusSignature: Signature { "u" }
  public init?(dbusValue: DBusValue) {
    guard case .uint32(let v) = dbusValue.unwrapped else { return nil }
    self = v
  }
  public var dbusValue: DBusValue { .uint32(self) }
}

extension Int64: DBusRepresentable {
  public static var dbusSignature: Signature { "x" }
  public init?(dbusValue: DBusValue) {
    guard case .int64(let v) = dbusValue.unwrapped else { return nil }
    self = v
  }
  public var dbusValue: DBusValue { .int64(self) }
}

extension UInt64: DBusRepresentable {
  public static var dbusSignature: Signature { "t" }
  public init?(dbusValue: DBusValue) {
    guard case .uint64(let v) = dbusValue.unwrapped else { return nil }
    self = v
  }
  public var dbusValue: DBusValue { .uint64(self) }
}

extension Double: DBusRepresentable {
  public static var dbusSignature: Signature { "d" }
  public init?(dbusValue: DBusValue) {
    guard case .double(let v) = dbusValue.unwrapped else { return nil }
    self = v
  }
  public var dbusValue: DBusValue { .double(self) }
}

extension String: DBusRepresentable {
  public static var dbusSignature: Signature { "s" }
  public init?(dbusValue: DBusValue) {
    guard case .string(let v) = dbusValue.unwrapped else { return nil }
    self = v
  }
  public var dbusValue: DBusValue { .string(self) }
}

extension ObjectPath: DBusRepresentable {
  public static var dbusSignature: Signature { "o" }
  public init?(dbusValue: DBusValue) {
    guard case .objectPath(let v) = dbusValue.unwrapped else { return nil }
    self = v
  }
  public var dbusValue: DBusValue { .objectPath(self) }
}

extension Array: DBusRepresentable where Element: DBusRepresentable {
  public static var dbusSignature: Signature { Signature("a" + Element.dbusSignature.rawValue) }
  public init?(dbusValue: DBusValue) {
    guard let items = dbusValue.arrayElements else { return nil }
    var out: [Element] = []
    out.reserveCapacity(items.count)
    for item in items {
      guard let element = Element(dbusValue: item) else { return nil }
      out.append(element)
    }
    self = out
  }
  public var dbusValue: DBusValue {
    if Element.self == UInt8.self, let bytes = self as? [UInt8] { return .bytes(bytes) }
    return .array(element: Element.dbusSignature, map(\.dbusValue))
  }
}

extension Dictionary: DBusRepresentable where Key: DBusRepresentable, Value: DBusRepresentable {
  public static var dbusSignature: Signature {
    Signature("a{" + Key.dbusSignature.rawValue + Value.dbusSignature.rawValue + "}")
  }
  public init?(dbusValue: DBusValue) {
    guard let entries = dbusValue.dictionaryEntries else { return nil }
    var out: [Key: Value] = [:]
    for entry in entries {
      guard let key = Key(dbusValue: entry.key), let value = Value(dbusValue: entry.value) else { return nil }
      out[key] = value
    }
    self = out
  }
  public var dbusValue: DBusValue {
    .dictionary(
      key: Key.dbusSignature, value: Value.dbusSignature,
      map { DBusValue.DictionaryEntry($0.key.dbusValue, $0.value.dbusValue) })
  }
}

/// `v`: a value of any type, as in `a{sv}` dictionaries (`[String: Variant]`).
public struct Variant: DBusRepresentable, Hashable {
  public var value: DBusValue
  public init(_ value: DBusValue) { self.value = value }
  public static var dbusSignature: Signature { "v" }
  public init?(dbusValue: DBusValue) {
    guard case .variant(let inner) = dbusValue else { return nil }
    value = inner
  }
  public var dbusValue: DBusValue { .variant(value) }
}

extension Connection {
  /// Calls a method whose reply is one value of type `T`.
  ///
  /// Throws `DBusError` named `org.freedesktop.DBus.Error.InvalidSignature` when the reply has
  /// another type, keeping both signatures in the message.
  public func call<T: DBusRepresentable>(
    destination: BusName?, path: ObjectPath, interface: InterfaceName?, member: MemberName,
    _ arguments: [DBusValue] = [], timeout: Duration = Connection.defaultTimeout, returning: T.Type
  ) async throws -> T {
    let reply = try await callReturningOne(
      destination: destination, path: path, interface: interface, member: member, arguments, timeout: timeout)
    guard let value = T(dbusValue: reply) else {
      throw DBusError(
        .invalidSignature, "\(member) replied \(reply.signature), expected \(T.dbusSignature)")
    }
    return value
  }
}
