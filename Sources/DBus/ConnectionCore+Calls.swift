import CDBus
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Method calls: sending, pending replies, timeouts and cancellation.
extension ConnectionCore {
  // MARK: Replies (reader thread, inside dbus_connection_dispatch, connection unlocked)

  func reply(_ message: OpaquePointer) -> DBusHandlerResult {
    let serial = dbus_message_get_reply_serial(message)
    let pending = state.withLock { state -> PendingReply? in
      guard let id = state.callBySerial.removeValue(forKey: serial),
        case .waiting(_, let pending) = state.calls.removeValue(forKey: id)
      else { return nil }
      return pending
    }
    guard let pending else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    if dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_ERROR {
      let body = MessageReader.body(of: message)
      let name = dbus_message_get_error_name(message).map { String(cString: $0) } ?? ErrorName.failed.rawValue
      pending.fail(DBusError(ErrorName(name), body.first?.string ?? ""))
    } else {
      pending.take(message)
    }
    return DBUS_HANDLER_RESULT_HANDLED
  }

  // MARK: Calls

  func reserveCall() -> UInt64 {
    state.withLock { state in
      state.nextID += 1
      state.calls[state.nextID] = .reserved
      return state.nextID
    }
  }

  /// Sends `message` and parks `pending` until its reply, error, timeout or cancellation.
  /// The corresponding C function is `dbus_connection_send`.
  func send(
    _ message: Message, id: UInt64, timeout: Duration, reply pending: PendingReply
  ) {
    let failure: (any Error)? = state.withLock { state in
      if let reason = state.closedReason
        ?? (state.closing ? DBusError(.disconnected, "connection closed") : nil)
      {
        state.calls.removeValue(forKey: id)
        return reason
      }
      guard case .reserved = state.calls[id] else {
        state.calls.removeValue(forKey: id)
        return CancellationError()
      }
      var serial: UInt32 = 0
      // Holding the lock while sending: a reply cannot be dispatched before it is registered.
      guard dbus_connection_send(connection, message.pointer, &serial) != 0 else {
        state.calls.removeValue(forKey: id)
        return DBusError(.noMemory, "dbus_connection_send failed")
      }
      state.calls[id] = .waiting(serial: serial, pending)
      state.callBySerial[serial] = id
      return nil
    }
    if let failure {
      pending.fail(failure)
      return
    }
    let (seconds, attoseconds) = timeout.components
    let nanoseconds = Int(clamping: seconds) &* 1_000_000_000 &+ Int(attoseconds / 1_000_000_000)
    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
      self?.finishCall(id, error: DBusError(.noReply, "no reply within \(timeout)"))
    }
  }

  /// Ends a call early (timeout or cancellation). A call not yet sent is marked cancelled.
  func finishCall(_ id: UInt64, error: any Error) {
    let pending = state.withLock { state -> PendingReply? in
      switch state.calls[id] {
      case .reserved:
        state.calls[id] = .cancelled
        return nil
      case .waiting(let serial, let pending):
        state.calls.removeValue(forKey: id)
        state.callBySerial.removeValue(forKey: serial)
        return pending
      case .cancelled, nil:
        return nil
      }
    }
    pending?.fail(error)
  }

  /// Sends without waiting for a reply (signals, fire-and-forget calls).
  func sendNoReply(_ message: Message) throws(DBusError) {
    dbus_message_set_no_reply(message.pointer, 1)
    let sent = state.withLock { state -> Bool? in
      guard state.closedReason == nil, !state.closing else { return nil }
      return dbus_connection_send(connection, message.pointer, nil) != 0
    }
    guard let sent else { throw DBusError(.disconnected, "connection closed") }
    guard sent else { throw DBusError(.noMemory, "dbus_connection_send failed") }
  }
}
