import DBus

/// Why the BlueZ source could not scan, or why a BlueZ call failed. Wraps a code (open for new
/// cases without breaking API), the message, and where it was raised.
///
/// BlueZ's own error replies (`org.bluez.Error.*`) become a `BlueZError` here, in one place
/// (`init?(_:)`); every other D-Bus error (the bus's, its policy's) stays a `DBusError`.
public struct BlueZError: Error, CustomStringConvertible, Sendable {
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    /// Our own kinds by name; BlueZ's by their D-Bus error name.
    private let name: String
    private init(_ name: String) { self.name = name }
    private static let prefix = BlueZ.ErrorReply.prefix

    /// `org.bluez` is not on the bus (bluetoothd is not running).
    public static let bluezUnavailable = Code("bluezUnavailable")
    /// BlueZ knows no adapter.
    public static let noAdapter = Code("noAdapter")
    /// The requested `hciN` does not exist.
    public static let adapterNotFound = Code("adapterNotFound")

    // BlueZ's own, by their D-Bus error names (`BlueZ.ErrorReply`).
    /// The adapter is not powered (StartDiscovery).
    public static let notReady = Code(BlueZ.ErrorReply.notReady)
    /// A discovery is already running, or the kernel refused with Busy (StartDiscovery).
    public static let inProgress = Code(BlueZ.ErrorReply.inProgress)
    public static let invalidArguments = Code(BlueZ.ErrorReply.invalidArguments)
    public static let notSupported = Code(BlueZ.ErrorReply.notSupported)
    public static let notAuthorized = Code(BlueZ.ErrorReply.notAuthorized)
    public static let failed = Code(BlueZ.ErrorReply.failed)
    /// The object is gone (RemoveDevice, UnregisterMonitor).
    public static let doesNotExist = Code(BlueZ.ErrorReply.doesNotExist)

    /// The D-Bus error name BlueZ replied with, for BlueZ's codes.
    public var errorName: ErrorName? { name.hasPrefix(Self.prefix) ? ErrorName(name) : nil }

    public var description: String { name }

    /// The code of a BlueZ error reply; nil for a name outside `org.bluez.Error.`.
    init?(errorName: ErrorName) {
      guard errorName.rawValue.hasPrefix(Self.prefix) else { return nil }
      self.name = errorName.rawValue
    }
  }

  public var code: Code
  public var message: String
  public var file: String
  public var line: Int

  public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
    self.code = code
    self.message = message
    self.file = file
    self.line = line
  }

  /// BlueZ's error reply as a `BlueZError`; nil for any D-Bus error that is not BlueZ's own.
  public init?(_ error: DBusError) {
    guard let code = Code(errorName: error.name) else { return nil }
    self.init(code, error.message, file: error.file, line: error.line)
  }

  /// Runs a call to BlueZ, turning BlueZ's error replies into `BlueZError`.
  static func mapping<T>(_ call: () async throws -> T) async throws -> T {
    do {
      return try await call()
    } catch let error as DBusError {
      if let mapped = BlueZError(error) { throw mapped }
      throw error
    }
  }

  public var description: String {
    guard let name = code.errorName else { return message }
    return message.isEmpty ? name.rawValue : "\(name.rawValue): \(message)"
  }
}
