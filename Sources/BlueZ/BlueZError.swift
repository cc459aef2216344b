import DBus

/// Why the BlueZ source could not scan. Wraps a code (open for new cases without breaking API),
/// the message, the D-Bus error behind it if any, and where it was raised.
public struct BlueZError: Error, CustomStringConvertible, Sendable {
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable, Sendable {
      case bluezUnavailable, noAdapter, adapterNotFound, dbus
    }
    private let kind: Kind

    /// `org.bluez` is not on the bus (bluetoothd is not running).
    public static let bluezUnavailable = Code(kind: .bluezUnavailable)
    /// BlueZ knows no adapter.
    public static let noAdapter = Code(kind: .noAdapter)
    /// The requested `hciN` does not exist.
    public static let adapterNotFound = Code(kind: .adapterNotFound)
    /// A D-Bus call failed; see `underlying`.
    public static let dbus = Code(kind: .dbus)

    public var description: String { "\(kind)" }
  }

  public var code: Code
  public var message: String
  public var underlying: DBusError?
  public var file: String
  public var line: Int

  public init(
    _ code: Code, _ message: String, underlying: DBusError? = nil, file: String = #fileID, line: Int = #line
  ) {
    self.code = code
    self.message = message
    self.underlying = underlying
    self.file = file
    self.line = line
  }

  public var description: String {
    if let underlying { return "\(message) (\(underlying))" }
    return message
  }
}
