import CDBus
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The state behind a `Connection`, shared between callers and the reader thread.
///
/// Threading model:
/// - `dbus_threads_init_default()` runs once before any connection is opened, so libdbus locks
///   its own state and any thread may send.
/// - One reader thread per connection owns all *incoming* work. libdbus tells us which file
///   descriptors it wants watched (`dbus_connection_set_watch_functions`); the thread sleeps in
///   `poll(2)` on them plus a self-pipe (`wake()`), and on readiness reads everything the socket holds, then
///   dispatches every queued message in one go. Replies and signals found in that pass are handed
///   on together: signal subscribers receive one array per pass, not one wake-up per message
///   (docs/DESIGN.md, Behaviour, "Wake-ups dominate CPU").
/// - Callers send from their own thread (`dbus_connection_send`). If the socket is full, libdbus
///   enables the write watch, which wakes the reader to flush it.
/// - Only the reader thread closes and unrefs the `DBusConnection`, after its loop ends, so no
///   watch or connection pointer is used after free.
///
/// `@unchecked Sendable`: the raw pointers are used only under the rules above; all Swift state
/// is behind `Mutex`es.
///
/// One job per file: this one holds the state and the lifecycle (open, start, shut down);
/// `+Reader` the poll loop and the wake-up pipe; `+Calls` pending calls, their replies and
/// timeouts; `+Signals` routing signals to subscriptions (`SignalSink`); `+Exports` exported
/// objects and their replies; `LibDBusCallbacks` the C trampolines.
final class ConnectionCore: @unchecked Sendable {
  let connection: OpaquePointer
  let uniqueName: BusName
  let batchInterval: Duration
  /// A self-pipe: `wake()` writes to `wakeWriteFD`, the reader polls `wakeFD`.
  let wakeFD: Int32
  let wakeWriteFD: Int32
  let state = Mutex(State())
  let watches = Mutex([Watch]())
  let stopped = DispatchSemaphore(value: 0)
  /// `pthread_self()` of the reader thread, once it runs.
  let readerThread = Atomic<UInt>(0)
  /// Whether `start()` launched the reader (only then is there anything to wait for).
  let started = Atomic<Bool>(false)
  let wakeUps = Atomic<Int>(0)
  let socketReads = Atomic<Int>(0)
  let messagesDispatched = Atomic<Int>(0)
  let signalBatches = Atomic<Int>(0)
  /// Bumped whenever `state.subscribers` changes, so the reader refreshes `readerSinks`.
  let sinksVersion = Atomic<Int>(0)
  /// The reader thread's copy of the subscribers, so a signal costs no lock: touched only on
  /// the reader thread.
  var readerSinks: [any SignalSink] = []
  var readerSinksVersion = -1

  struct Watch: @unchecked Sendable {
    var pointer: OpaquePointer
    var fd: Int32
    var flags: UInt32
    var enabled: Bool
  }

  enum CallSlot {
    /// The call has an id but is not sent yet.
    case reserved
    /// Cancelled before it was sent.
    case cancelled
    case waiting(serial: UInt32, PendingReply)
  }

  /// Where a sent call's reply goes. `take` runs on the reader thread inside
  /// `dbus_connection_dispatch` with a successful reply and resumes the caller; `fail` resumes it
  /// with an error (an error reply, a timeout, cancellation, the connection closing).
  struct PendingReply: @unchecked Sendable {
    // @unchecked: `take`'s message argument is only used during the call, on the reader thread.
    let take: (OpaquePointer) -> Void
    let fail: (any Error) -> Void

    /// The reply's body as `DBusValue`s.
    static func values(_ continuation: CheckedContinuation<[DBusValue], any Error>) -> PendingReply {
      PendingReply(
        take: { continuation.resume(returning: MessageReader.body(of: $0)) },
        fail: { continuation.resume(throwing: $0) })
    }

    /// The reply read in place by `decode` (see `Connection.call(…decoding:)`).
    static func decoding<T: Sendable>(
      _ decode: @escaping @Sendable (borrowing WireMessage) throws -> T,
      _ continuation: CheckedContinuation<T, any Error>
    ) -> PendingReply {
      PendingReply(
        take: { message in
          continuation.resume(with: Result { try WireMessage.withMarshalled(message, decode) })
        },
        fail: { continuation.resume(throwing: $0) })
    }
  }

  struct State {
    var closing = false
    var closedReason: DBusError?
    var nextID: UInt64 = 0
    var calls: [UInt64: CallSlot] = [:]
    var callBySerial: [UInt32: UInt64] = [:]
    var subscribers: [UInt64: any SignalSink] = [:]
    var exports: [UInt64: Export] = [:]
  }

  struct Export {
    var path: ObjectPath
    var subtree: Bool
    var handler: MethodHandler
  }

  static let threadsInitialised: Bool = {
    // The corresponding C function is `dbus_threads_init_default`. It must run before any other
    // libdbus call that may race.
    dbus_threads_init_default() != 0
  }()

  /// Opens a private connection and registers it on the bus (`Hello`).
  /// The corresponding C functions are `dbus_connection_open_private` and `dbus_bus_register`.
  init(address: String, batchInterval: Duration) throws(DBusError) {
    guard Self.threadsInitialised else { throw DBusError(.noMemory, "dbus_threads_init_default failed") }
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    guard let connection = dbus_connection_open_private(address, &error) else {
      throw DBusError(consuming: &error, fallback: .noServer, "cannot connect to \(address)")
    }
    // A private connection is ours to close; libdbus must not exit(3) the process when it drops.
    dbus_connection_set_exit_on_disconnect(connection, 0)
    guard dbus_bus_register(connection, &error) != 0 else {
      let failure = DBusError(consuming: &error, fallback: .failed, "Hello failed on \(address)")
      dbus_connection_close(connection)
      dbus_connection_unref(connection)
      throw failure
    }
    var pipeFDs: [Int32] = [-1, -1]
    guard pipe(&pipeFDs) == 0 else {
      dbus_connection_close(connection)
      dbus_connection_unref(connection)
      throw DBusError(.failed, "pipe2 failed: errno \(errno)")
    }
    self.connection = connection
    for fd in pipeFDs {
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
      _ = fcntl(fd, F_SETFL, O_NONBLOCK)
    }
    self.wakeFD = pipeFDs[0]
    self.wakeWriteFD = pipeFDs[1]
    self.batchInterval = batchInterval
    self.uniqueName = BusName(dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? "")
  }

  /// Installs the callbacks and starts the reader thread. The thread keeps `self` alive until it
  /// has closed the connection.
  func start() throws(DBusError) {
    let context = Unmanaged.passUnretained(self).toOpaque()
    guard dbus_connection_add_filter(connection, coreFilter, context, nil) != 0,
      dbus_connection_set_watch_functions(
        connection, coreAddWatch, coreRemoveWatch, coreToggleWatch, context, nil)
        != 0
    else {
      dbus_connection_close(connection)
      dbus_connection_unref(connection)
      close(wakeFD)
      close(wakeWriteFD)
      throw DBusError(.noMemory, "cannot install libdbus callbacks")
    }
    dbus_connection_set_wakeup_main_function(connection, coreWake, context, nil)
    dbus_connection_set_dispatch_status_function(connection, coreDispatchStatus, context, nil)
    started.store(true, ordering: .releasing)
    OSThread.detach(name: "dbus-reader \(uniqueName)") { [self] in runLoop() }
  }

  /// Ends every call and subscription, then closes and frees the connection.
  /// The corresponding C functions are `dbus_connection_close` and `dbus_connection_unref`.
  func shutDown() {
    let (calls, subscribers) = state.withLock { state in
      let reason = state.closedReason ?? DBusError(.disconnected, "the connection was closed")
      state.closedReason = reason
      state.closing = true
      let calls = state.calls.values.compactMap { slot -> PendingReply? in
        if case .waiting(_, let pending) = slot { return pending }
        return nil
      }
      let subscribers = Array(state.subscribers.values)
      state.calls.removeAll()
      state.callBySerial.removeAll()
      state.subscribers.removeAll()
      return (calls.map { ($0, reason) }, subscribers)
    }
    for (pending, reason) in calls { pending.fail(reason) }
    for sink in subscribers { sink.finish() }
    dbus_connection_remove_filter(connection, coreFilter, Unmanaged.passUnretained(self).toOpaque())
    dbus_connection_close(connection)
    dbus_connection_unref(connection)
    close(wakeFD)
    close(wakeWriteFD)
    stopped.signal()
  }

  /// Asks the reader to stop and waits until it has freed the connection.
  func closeAndWait() {
    guard started.load(ordering: .acquiring) else { return }
    let wasClosing = state.withLock { state in
      defer { state.closing = true }
      return state.closing
    }
    if !wasClosing { wake() }
    stopped.wait()
    stopped.signal()  // later callers return at once
  }

  var isClosed: Bool { state.withLock { $0.closedReason != nil || $0.closing } }
}
