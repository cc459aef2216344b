#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Which bus to connect to.
public enum BusAddress: Hashable, Sendable, CustomStringConvertible {
  /// The system bus: `DBUS_SYSTEM_BUS_ADDRESS`, or the well-known socket when it is unset.
  case system
  /// The session bus: `DBUS_SESSION_BUS_ADDRESS`.
  case session
  /// An explicit D-Bus address, such as `unix:path=/tmp/x/bus` (tests use this).
  case address(String)

  /// The default system bus socket (dbus-protocol.h, DBUS_SYSTEM_BUS_DEFAULT_ADDRESS).
  public static let defaultSystemAddress = "unix:path=/var/run/dbus/system_bus_socket"

  /// The address string to connect to, reading the environment as libdbus would.
  public func resolve(environment: (String) -> String? = BusAddress.processEnvironment) throws(DBusError)
    -> String
  {
    switch self {
    case .system:
      if let value = environment("DBUS_SYSTEM_BUS_ADDRESS"), !value.isEmpty { return value }
      return Self.defaultSystemAddress
    case .session:
      guard let value = environment("DBUS_SESSION_BUS_ADDRESS"), !value.isEmpty else {
        throw DBusError(.badAddress, "DBUS_SESSION_BUS_ADDRESS is not set")
      }
      return value
    case .address(let value):
      return value
    }
  }

  /// Reads one variable of this process's environment.
  public static let processEnvironment: @Sendable (String) -> String? = { name in
    getenv(name).map { String(cString: $0) }
  }

  public var description: String {
    switch self {
    case .system: "system bus"
    case .session: "session bus"
    case .address(let value): value
    }
  }
}
