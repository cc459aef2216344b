import CDBus
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Exported objects: method calls to our paths, run on a task, and their replies.
extension ConnectionCore {
  // MARK: Exported objects

  /// A call to an exported path runs its handler on a task; the reply is sent when it returns.
  /// Calls to other paths are left to libdbus, which answers `UnknownMethod`.
  /// The corresponding C functions are `dbus_message_ref` and `dbus_message_new_method_return`.
  func methodCall(_ message: OpaquePointer) -> DBusHandlerResult {
    func text(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }
    let path = ObjectPath(text(dbus_message_get_path(message)) ?? "/")
    let handler = state.withLock { state in
      state.exports.values.first { $0.path == path }?.handler
        ?? state.exports.values.first { $0.subtree && path.isDescendant(ofOrEqualTo: $0.path) }?.handler
    }
    guard let handler else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let call = MethodCall(
      sender: text(dbus_message_get_sender(message)).map { BusName($0) }, path: path,
      interface: text(dbus_message_get_interface(message)).map { InterfaceName($0) },
      member: MemberName(text(dbus_message_get_member(message)) ?? ""),
      signature: Signature(text(dbus_message_get_signature(message)) ?? ""),
      body: MessageReader.body(of: message))
    let wantsReply = dbus_message_get_no_reply(message) == 0
    let retained = Message(adopting: dbus_message_ref(message))
    Task { [weak self] in
      let result = await handler(call)
      guard wantsReply, let self else { return }
      self.reply(to: retained, with: result)
    }
    return DBUS_HANDLER_RESULT_HANDLED
  }

  /// The corresponding C functions are `dbus_message_new_method_return` and
  /// `dbus_message_new_error`.
  func reply(to call: Message, with result: MethodResult) {
    var raw: OpaquePointer?
    var body: [DBusValue] = []
    switch result {
    case .success(let values):
      raw = dbus_message_new_method_return(call.pointer)
      body = values
    case .failure(let error):
      raw = dbus_message_new_error(call.pointer, error.name.rawValue, error.message)
    }
    guard let raw else { return }
    let reply = Message(adopting: raw)
    do {
      try reply.append(body)
    } catch {
      // The handler returned values libdbus cannot marshal: answer with that error instead.
      guard let fallback = dbus_message_new_error(call.pointer, error.name.rawValue, error.message) else {
        return
      }
      send(reply: Message(adopting: fallback))
      return
    }
    send(reply: reply)
  }

  func send(reply: Message) {
    state.withLock { state in
      guard state.closedReason == nil, !state.closing else { return }
      _ = dbus_connection_send(connection, reply.pointer, nil)
    }
  }

  func addExport(_ path: ObjectPath, subtree: Bool, handler: @escaping MethodHandler) -> UInt64? {
    state.withLock { state in
      guard state.closedReason == nil, !state.closing else { return nil }
      state.nextID += 1
      state.exports[state.nextID] = Export(path: path, subtree: subtree, handler: handler)
      return state.nextID
    }
  }

  func removeExport(_ id: UInt64) {
    _ = state.withLock { $0.exports.removeValue(forKey: id) }
  }

}
