/// A method call received on an exported path.
public struct MethodCall: Sendable, Hashable {
  /// The caller's unique name.
  public var sender: BusName?
  public var path: ObjectPath
  public var interface: InterfaceName?
  public var member: MemberName
  public var signature: Signature
  public var body: [DBusValue]
}

/// What a handler answers: the reply's body, or an error the caller receives by name.
public typealias MethodResult = Result<[DBusValue], DBusError>

/// Handles the calls to an exported path. It runs on a task, so it may await.
public typealias MethodHandler = @Sendable (MethodCall) async -> MethodResult

/// An object path served by this connection. `unexport()` (or dropping it) stops serving it.
public final class ExportedObject: Sendable {
  private let core: ConnectionCore
  private let id: UInt64
  public let path: ObjectPath

  init(core: ConnectionCore, id: UInt64, path: ObjectPath) {
    self.core = core
    self.id = id
    self.path = path
  }

  public func unexport() { core.removeExport(id) }

  deinit { core.removeExport(id) }
}

extension Connection {
  /// Serves method calls to `path` (and below it, if `subtree`). Calls to paths nobody exports
  /// get libdbus's `UnknownMethod` error; a handler answers unknown members itself (see
  /// `DBusError.unknownMethod(_:)`).
  public func export(_ path: ObjectPath, subtree: Bool = false, handler: @escaping MethodHandler)
    throws(DBusError)
    -> ExportedObject
  {
    guard let id = core.addExport(path, subtree: subtree, handler: handler) else {
      throw DBusError(.disconnected, "connection closed")
    }
    return ExportedObject(core: core, id: id, path: path)
  }
}

extension DBusError {
  /// The error for a call no handler knows, in libdbus's words.
  public static func unknownMethod(_ call: MethodCall) -> DBusError {
    DBusError(
      .unknownMethod,
      "Method \"\(call.member)\" with signature \"\(call.signature)\" on interface "
        + "\"\(call.interface?.rawValue ?? "(none)")\" doesn't exist")
  }
}
