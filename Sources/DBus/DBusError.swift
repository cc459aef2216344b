/// A D-Bus error name, such as `org.freedesktop.DBus.Error.ServiceUnknown` or
/// `org.bluez.Error.NotReady`: the error's code, kept as the remote sent it.
public struct ErrorName: RawRepresentable, Hashable, Sendable, CustomStringConvertible,
  ExpressibleByStringLiteral
{
  public var rawValue: String
  public init(rawValue: String) { self.rawValue = rawValue }
  public init(_ rawValue: String) { self.rawValue = rawValue }
  public init(stringLiteral value: String) { self.rawValue = value }
  public var description: String { rawValue }

  // dbus-protocol.h, DBUS_ERROR_*.
  public static let failed = ErrorName("org.freedesktop.DBus.Error.Failed")
  public static let noMemory = ErrorName("org.freedesktop.DBus.Error.NoMemory")
  public static let serviceUnknown = ErrorName("org.freedesktop.DBus.Error.ServiceUnknown")
  public static let nameHasNoOwner = ErrorName("org.freedesktop.DBus.Error.NameHasNoOwner")
  /// A method call got no reply within its timeout (libdbus uses the same name).
  public static let noReply = ErrorName("org.freedesktop.DBus.Error.NoReply")
  public static let noServer = ErrorName("org.freedesktop.DBus.Error.NoServer")
  public static let timeout = ErrorName("org.freedesktop.DBus.Error.Timeout")
  public static let disconnected = ErrorName("org.freedesktop.DBus.Error.Disconnected")
  public static let invalidArgs = ErrorName("org.freedesktop.DBus.Error.InvalidArgs")
  public static let unknownMethod = ErrorName("org.freedesktop.DBus.Error.UnknownMethod")
  public static let unknownObject = ErrorName("org.freedesktop.DBus.Error.UnknownObject")
  public static let unknownInterface = ErrorName("org.freedesktop.DBus.Error.UnknownInterface")
  public static let unknownProperty = ErrorName("org.freedesktop.DBus.Error.UnknownProperty")
  public static let accessDenied = ErrorName("org.freedesktop.DBus.Error.AccessDenied")
  public static let matchRuleInvalid = ErrorName("org.freedesktop.DBus.Error.MatchRuleInvalid")
  public static let invalidSignature = ErrorName("org.freedesktop.DBus.Error.InvalidSignature")
  public static let badAddress = ErrorName("org.freedesktop.DBus.Error.BadAddress")
  public static let fileNotFound = ErrorName("org.freedesktop.DBus.Error.FileNotFound")
  public static let notSupported = ErrorName("org.freedesktop.DBus.Error.NotSupported")
  public static let authFailed = ErrorName("org.freedesktop.DBus.Error.AuthFailed")
}

/// An error from the bus, a remote peer, or libdbus: its name and message as sent, plus where in
/// this program it surfaced.
///
/// The set of names is open (any service may define its own), so this is a struct wrapping an
/// `ErrorName` rather than an enum.
public struct DBusError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The D-Bus error name, for example `org.freedesktop.DBus.Error.ServiceUnknown`.
  public var name: ErrorName
  /// The human-readable message that came with the error (may be empty).
  public var message: String
  public var file: String
  public var line: Int

  public init(_ name: ErrorName, _ message: String, file: String = #fileID, line: Int = #line) {
    self.name = name
    self.message = message
    self.file = file
    self.line = line
  }

  public var description: String { message.isEmpty ? name.rawValue : "\(name.rawValue): \(message)" }

  public static func == (lhs: DBusError, rhs: DBusError) -> Bool {
    lhs.name == rhs.name && lhs.message == rhs.message
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(name)
    hasher.combine(message)
  }

  /// Pattern-match on the name: `catch let error as DBusError where error ~= .serviceUnknown`.
  public static func ~= (name: ErrorName, error: DBusError) -> Bool { error.name == name }
}
