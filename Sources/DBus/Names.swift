/// A D-Bus object path, such as `/org/bluez/hci0`.
public struct ObjectPath: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible,
  ExpressibleByStringLiteral
{
  public var rawValue: String
  public init(rawValue: String) { self.rawValue = rawValue }
  public init(_ rawValue: String) { self.rawValue = rawValue }
  public init(stringLiteral value: String) { self.rawValue = value }
  public var description: String { rawValue }
  public static func < (lhs: ObjectPath, rhs: ObjectPath) -> Bool { lhs.rawValue < rhs.rawValue }

  /// The root object, `/`.
  public static let root = ObjectPath("/")

  /// Whether `self` is `ancestor` or lies below it (the `path_namespace` rule of a match).
  public func isDescendant(ofOrEqualTo ancestor: ObjectPath) -> Bool {
    if ancestor.rawValue == "/" || rawValue == ancestor.rawValue { return true }
    return rawValue.hasPrefix(ancestor.rawValue + "/")
  }

  /// The last path element: `hci0` for `/org/bluez/hci0`.
  public var lastComponent: String {
    rawValue.split(separator: "/").last.map(String.init) ?? ""
  }
}

/// A bus name: unique (`:1.42`) or well-known (`org.bluez`).
public struct BusName: RawRepresentable, Hashable, Sendable, CustomStringConvertible,
  ExpressibleByStringLiteral
{
  public var rawValue: String
  public init(rawValue: String) { self.rawValue = rawValue }
  public init(_ rawValue: String) { self.rawValue = rawValue }
  public init(stringLiteral value: String) { self.rawValue = value }
  public var description: String { rawValue }

  /// Whether this is a unique connection name (starts with `:`).
  public var isUnique: Bool { rawValue.hasPrefix(":") }

  /// The message bus itself, `org.freedesktop.DBus`.
  public static let bus = BusName("org.freedesktop.DBus")
}

/// An interface name, such as `org.freedesktop.DBus.Properties`.
public struct InterfaceName: RawRepresentable, Hashable, Sendable, CustomStringConvertible,
  ExpressibleByStringLiteral
{
  public var rawValue: String
  public init(rawValue: String) { self.rawValue = rawValue }
  public init(_ rawValue: String) { self.rawValue = rawValue }
  public init(stringLiteral value: String) { self.rawValue = value }
  public var description: String { rawValue }

  public static let bus = InterfaceName("org.freedesktop.DBus")
  public static let properties = InterfaceName("org.freedesktop.DBus.Properties")
  public static let objectManager = InterfaceName("org.freedesktop.DBus.ObjectManager")
  public static let introspectable = InterfaceName("org.freedesktop.DBus.Introspectable")
  public static let peer = InterfaceName("org.freedesktop.DBus.Peer")
  /// Messages libdbus synthesises locally, such as `Disconnected`.
  public static let local = InterfaceName("org.freedesktop.DBus.Local")
}

/// A method or signal name, such as `GetManagedObjects`.
public struct MemberName: RawRepresentable, Hashable, Sendable, CustomStringConvertible,
  ExpressibleByStringLiteral
{
  public var rawValue: String
  public init(rawValue: String) { self.rawValue = rawValue }
  public init(_ rawValue: String) { self.rawValue = rawValue }
  public init(stringLiteral value: String) { self.rawValue = value }
  public var description: String { rawValue }
}

/// A D-Bus type signature, such as `a{sv}`.
public struct Signature: RawRepresentable, Hashable, Sendable, CustomStringConvertible,
  ExpressibleByStringLiteral
{
  public var rawValue: String
  public init(rawValue: String) { self.rawValue = rawValue }
  public init(_ rawValue: String) { self.rawValue = rawValue }
  public init(stringLiteral value: String) { self.rawValue = value }
  public var description: String { rawValue }

  /// Whether libdbus accepts this as a valid signature.
  /// The corresponding C function is `dbus_signature_validate`.
  public var isValid: Bool { _signatureIsValid(rawValue) }
}
