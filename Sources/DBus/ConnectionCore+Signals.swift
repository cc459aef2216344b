import CDBus
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Incoming messages by type, and signals routed to subscriptions.
extension ConnectionCore {
  // MARK: Incoming messages (reader thread, inside dbus_connection_dispatch, connection unlocked)

  func filter(_ message: OpaquePointer) -> DBusHandlerResult {
    messagesDispatched.add(1, ordering: .relaxed)
    switch dbus_message_get_type(message) {
    case DBUS_MESSAGE_TYPE_METHOD_RETURN, DBUS_MESSAGE_TYPE_ERROR:
      return reply(message)
    case DBUS_MESSAGE_TYPE_SIGNAL:
      signal(message)
      return DBUS_HANDLER_RESULT_HANDLED
    case DBUS_MESSAGE_TYPE_METHOD_CALL:
      return methodCall(message)
    default:
      return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }
  }

  /// Hands a signal to every subscription whose rules match it (`CompiledRules`, as
  /// `SignalSocket` checks them); a subscription with a decoder gets the chance to read the raw
  /// message first, and the generic `Signal` (every value as a `DBusValue`) is built only if
  /// someone still needs it.
  func signal(_ message: OpaquePointer) {
    if CString.equal(dbus_message_get_interface(message), InterfaceName.local.rawValue),
      CString.equal(dbus_message_get_member(message), "Disconnected")
    {
      state.withLock { state in
        if state.closedReason == nil {
          state.closedReason = DBusError(.disconnected, "the bus closed the connection")
        }
      }
      return
    }
    refreshReaderSinks()
    var generic: Signal?
    for sink in readerSinks where sink.rules.matches(message) {
      if sink.decodes, sink.take(marshalled: message) { continue }
      let signal = generic ?? MessageReader.signal(of: message)
      generic = signal
      sink.take(signal)
    }
  }

  // MARK: Subscriptions

  /// Registers a subscription; its items arrive in one array per reader pass. `decode` reads the
  /// raw signals it recognises (on the reader thread); the others arrive as `wrap(signal)`.
  func addSubscriber<Item: Sendable>(
    rules: [MatchRule], wrap: @escaping @Sendable (Signal) -> Item,
    decode: (@Sendable (borrowing WireSignal) -> Item?)? = nil
  ) -> (UInt64, AsyncStream<[Item]>) {
    let (stream, continuation) = AsyncStream.makeStream(of: [Item].self)
    let sink = Sink(rules: rules, continuation: continuation, wrap: wrap, decode: decode)
    let id: UInt64? = state.withLock { state in
      guard state.closedReason == nil, !state.closing else { return nil }
      state.nextID += 1
      state.subscribers[state.nextID] = sink
      sinksVersion.add(1, ordering: .releasing)
      return state.nextID
    }
    guard let id else {
      continuation.finish()
      return (0, stream)
    }
    continuation.onTermination = { [weak self] _ in self?.removeSubscriber(id) }
    return (id, stream)
  }

  func removeSubscriber(_ id: UInt64) {
    let sink = state.withLock { state in
      defer { sinksVersion.add(1, ordering: .releasing) }
      return state.subscribers.removeValue(forKey: id)
    }
    sink?.finish()
  }

}
