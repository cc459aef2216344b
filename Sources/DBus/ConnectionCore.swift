import CDBus
import Dispatch
import Foundation
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
///   `poll(2)` on them plus an eventfd, and on readiness reads everything the socket holds, then
///   dispatches every queued message in one go. Replies and signals found in that pass are handed
///   on together: signal subscribers receive one array per pass, not one wake-up per message
///   (DESIGN §5, "Wake-ups dominate CPU").
/// - Callers send from their own thread (`dbus_connection_send`). If the socket is full, libdbus
///   enables the write watch, which wakes the reader to flush it.
/// - Only the reader thread closes and unrefs the `DBusConnection`, after its loop ends, so no
///   watch or connection pointer is used after free.
///
/// `@unchecked Sendable`: the raw pointers are used only under the rules above; all Swift state
/// is behind `Mutex`es.
final class ConnectionCore: @unchecked Sendable {
  let connection: OpaquePointer
  let uniqueName: BusName
  let batchInterval: Duration
  /// A self-pipe: `wake()` writes to `wakeWriteFD`, the reader polls `wakeFD`.
  private let wakeFD: Int32
  private let wakeWriteFD: Int32
  private let state = Mutex(State())
  private let watches = Mutex([Watch]())
  private let stopped = DispatchSemaphore(value: 0)
  /// `pthread_self()` of the reader thread, once it runs.
  private let readerThread = Atomic<UInt>(0)
  /// Whether `start()` launched the reader (only then is there anything to wait for).
  private let started = Atomic<Bool>(false)
  let wakeUps = Atomic<Int>(0)
  let socketReads = Atomic<Int>(0)
  let messagesDispatched = Atomic<Int>(0)
  let signalBatches = Atomic<Int>(0)
  /// Bumped whenever `state.subscribers` changes, so the reader refreshes `readerSinks`.
  private let sinksVersion = Atomic<Int>(0)
  /// The reader thread's copy of the subscribers, so a signal costs no lock: touched only on
  /// the reader thread.
  private var readerSinks: [any SignalSink] = []
  private var readerSinksVersion = -1

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
    case waiting(serial: UInt32, CheckedContinuation<[DBusValue], any Error>)
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

  private static let threadsInitialised: Bool = {
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
    let thread = Thread { [self] in runLoop() }
    thread.name = "dbus-reader \(uniqueName)"
    thread.start()
  }

  // MARK: Callbacks from libdbus (may run with the connection lock held: no libdbus calls here)

  func addWatch(_ watch: OpaquePointer) {
    let entry = Watch(
      pointer: watch, fd: dbus_watch_get_unix_fd(watch), flags: dbus_watch_get_flags(watch),
      enabled: dbus_watch_get_enabled(watch) != 0)
    watches.withLock { $0.append(entry) }
    wake()
  }

  func removeWatch(_ watch: OpaquePointer) {
    watches.withLock { $0.removeAll { $0.pointer == watch } }
    wake()
  }

  func toggleWatch(_ watch: OpaquePointer) {
    let enabled = dbus_watch_get_enabled(watch) != 0
    watches.withLock { list in
      for index in list.indices where list[index].pointer == watch { list[index].enabled = enabled }
    }
    wake()
  }

  /// Interrupts the reader's `poll`. Callbacks that libdbus makes on the reader thread itself
  /// (dispatch status, watch toggles while reading) need no wake-up: the loop re-reads watches and
  /// dispatch status before it polls again. Skipping them halves the wake-ups per message.
  func wake() {
    if readerThread.load(ordering: .relaxed) == UInt(pthread_self()) { return }
    var one: UInt8 = 1
    _ = write(wakeWriteFD, &one, 1)  // a full pipe already means "wake up"
  }

  // MARK: The reader thread

  private func runLoop() {
    readerThread.store(UInt(pthread_self()), ordering: .relaxed)
    var fds: [pollfd] = []
    while !state.withLock({ $0.closing }) {
      let active = watches.withLock { $0.filter(\.enabled) }
      fds.removeAll(keepingCapacity: true)
      fds.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
      for watch in active {
        var events: Int16 = 0
        if watch.flags & DBUS_WATCH_READABLE.rawValue != 0 { events |= Int16(POLLIN) }
        if watch.flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events |= Int16(POLLOUT) }
        fds.append(pollfd(fd: watch.fd, events: events, revents: 0))
      }
      let ready = poll(&fds, nfds_t(fds.count), -1)
      if ready < 0 {
        if errno == EINTR { continue }
        break
      }
      wakeUps.add(1, ordering: .relaxed)
      if fds[0].revents != 0 {
        var drain = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while read(wakeFD, &drain, 32) == 32 {}
      }
      for (index, watch) in active.enumerated() {
        let revents = fds[index + 1].revents
        if revents != 0 { handle(watch, revents: revents) }
      }
      dispatchQueued()
      if state.withLock({ $0.closedReason != nil }) { break }
      if batchInterval > .zero { ReaderThread.sleep(for: batchInterval) }
    }
    shutDown()
  }

  /// Reads until the socket is empty (bounded), so that one wake-up takes in every message
  /// already there. libdbus reads at most a few KiB per `dbus_watch_handle`.
  /// The corresponding C function is `dbus_watch_handle`.
  private func handle(_ watch: Watch, revents: Int16) {
    var flags: UInt32 = 0
    if revents & Int16(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
    if revents & Int16(POLLOUT) != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
    if revents & Int16(POLLERR) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
    if revents & Int16(POLLHUP) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
    _ = dbus_watch_handle(watch.pointer, flags)
    guard flags == DBUS_WATCH_READABLE.rawValue else { return }
    socketReads.add(1, ordering: .relaxed)
    for _ in 0..<256 {
      var probe = pollfd(fd: watch.fd, events: Int16(POLLIN), revents: 0)
      guard poll(&probe, 1, 0) == 1, probe.revents == Int16(POLLIN) else { return }
      guard watches.withLock({ $0.contains { $0.pointer == watch.pointer && $0.enabled } }) else { return }
      _ = dbus_watch_handle(watch.pointer, DBUS_WATCH_READABLE.rawValue)
      socketReads.add(1, ordering: .relaxed)
    }
  }

  /// Dispatches every queued message (each passes through `filter`), then hands each subscriber
  /// its batch.
  /// The corresponding C function is `dbus_connection_dispatch`.
  private func dispatchQueued() {
    while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
    for sink in readerSinks where sink.flush() {
      signalBatches.add(1, ordering: .relaxed)
    }
  }

  /// Reader thread only.
  private func refreshReaderSinks() {
    let version = sinksVersion.load(ordering: .acquiring)
    guard version != readerSinksVersion else { return }
    readerSinks = state.withLock { Array($0.subscribers.values) }
    readerSinksVersion = version
  }

  /// Ends every call and subscription, then closes and frees the connection.
  /// The corresponding C functions are `dbus_connection_close` and `dbus_connection_unref`.
  private func shutDown() {
    let (calls, subscribers) = state.withLock { state in
      let reason = state.closedReason ?? DBusError(.disconnected, "the connection was closed")
      state.closedReason = reason
      state.closing = true
      let calls = state.calls.values.compactMap { slot -> CheckedContinuation<[DBusValue], any Error>? in
        if case .waiting(_, let continuation) = slot { return continuation }
        return nil
      }
      let subscribers = Array(state.subscribers.values)
      state.calls.removeAll()
      state.callBySerial.removeAll()
      state.subscribers.removeAll()
      return (calls.map { ($0, reason) }, subscribers)
    }
    for (continuation, reason) in calls { continuation.resume(throwing: reason) }
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

  private func reply(_ message: OpaquePointer) -> DBusHandlerResult {
    let serial = dbus_message_get_reply_serial(message)
    let continuation = state.withLock { state -> CheckedContinuation<[DBusValue], any Error>? in
      guard let id = state.callBySerial.removeValue(forKey: serial),
        case .waiting(_, let continuation) = state.calls.removeValue(forKey: id)
      else { return nil }
      return continuation
    }
    guard let continuation else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let body = MessageReader.body(of: message)
    if dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_ERROR {
      let name = dbus_message_get_error_name(message).map { String(cString: $0) } ?? ErrorName.failed.rawValue
      continuation.resume(throwing: DBusError(ErrorName(name), body.first?.string ?? ""))
    } else {
      continuation.resume(returning: body)
    }
    return DBUS_HANDLER_RESULT_HANDLED
  }

  /// Hands a signal to every subscription whose rules match it. Headers are compared as C
  /// strings; a subscription with a decoder gets the chance to read the raw message first, and the
  /// generic `Signal` (every value as a `DBusValue`) is built only if someone still needs it.
  private func signal(_ message: OpaquePointer) {
    let interface = dbus_message_get_interface(message)
    let member = dbus_message_get_member(message)
    let path = dbus_message_get_path(message)
    let sender = dbus_message_get_sender(message)
    if CString.equal(interface, InterfaceName.local.rawValue), CString.equal(member, "Disconnected") {
      state.withLock { state in
        if state.closedReason == nil {
          state.closedReason = DBusError(.disconnected, "the bus closed the connection")
        }
      }
      return
    }
    refreshReaderSinks()
    var generic: Signal?
    for sink in readerSinks
    where sink.rules.contains(where: {
      $0.matchesHeader(sender: sender, path: path, interface: interface, member: member)
    }) {
      if sink.decodes, sink.take(marshalled: message) { continue }
      let signal = generic ?? MessageReader.signal(of: message)
      generic = signal
      if sink.rules.contains(where: {
        $0.matchesHeader(sender: sender, path: path, interface: interface, member: member)
          && $0.matchesBody(signal.body)
      }) {
        sink.take(signal)
      }
    }
  }

  // MARK: Exported objects

  /// A call to an exported path runs its handler on a task; the reply is sent when it returns.
  /// Calls to other paths are left to libdbus, which answers `UnknownMethod`.
  /// The corresponding C functions are `dbus_message_ref` and `dbus_message_new_method_return`.
  private func methodCall(_ message: OpaquePointer) -> DBusHandlerResult {
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
  private func reply(to call: Message, with result: MethodResult) {
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

  private func send(reply: Message) {
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

  // MARK: Calls

  func reserveCall() -> UInt64 {
    state.withLock { state in
      state.nextID += 1
      state.calls[state.nextID] = .reserved
      return state.nextID
    }
  }

  /// Sends `message` and parks `continuation` until its reply, error, timeout or cancellation.
  /// The corresponding C function is `dbus_connection_send`.
  func send(
    _ message: Message, id: UInt64, timeout: Duration,
    continuation: CheckedContinuation<[DBusValue], any Error>
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
      state.calls[id] = .waiting(serial: serial, continuation)
      state.callBySerial[serial] = id
      return nil
    }
    if let failure {
      continuation.resume(throwing: failure)
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
    let continuation = state.withLock { state -> CheckedContinuation<[DBusValue], any Error>? in
      switch state.calls[id] {
      case .reserved:
        state.calls[id] = .cancelled
        return nil
      case .waiting(let serial, let continuation):
        state.calls.removeValue(forKey: id)
        state.callBySerial.removeValue(forKey: serial)
        return continuation
      case .cancelled, nil:
        return nil
      }
    }
    continuation?.resume(throwing: error)
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

  var isClosed: Bool { state.withLock { $0.closedReason != nil || $0.closing } }
}

/// One subscription's signals, gathered during a reader pass.
protocol SignalSink: AnyObject, Sendable {
  var rules: [MatchRule] { get }
  var decodes: Bool { get }
  /// Offers the message to the subscription's decoder; true if it took it.
  func take(marshalled message: OpaquePointer) -> Bool
  /// Offers a message received as bytes to the decoder; true if it took it.
  func take(_ wire: borrowing WireSignal) -> Bool
  func take(_ signal: Signal)
  /// Hands the pass's items on, if any; true if it did.
  func flush() -> Bool
  func finish()
}

/// `@unchecked Sendable`: `batch` is touched only on the reader thread (take, flush); the
/// continuation is thread-safe.
final class Sink<Item: Sendable>: SignalSink, @unchecked Sendable {
  let rules: [MatchRule]
  let continuation: AsyncStream<[Item]>.Continuation
  let wrap: @Sendable (Signal) -> Item
  let decode: (@Sendable (borrowing WireSignal) -> Item?)?
  private var batch: [Item] = []

  init(
    rules: [MatchRule], continuation: AsyncStream<[Item]>.Continuation,
    wrap: @escaping @Sendable (Signal) -> Item,
    decode: (@Sendable (borrowing WireSignal) -> Item?)?
  ) {
    self.rules = rules
    self.continuation = continuation
    self.wrap = wrap
    self.decode = decode
  }

  var decodes: Bool { decode != nil }

  func take(_ wire: borrowing WireSignal) -> Bool {
    guard let decode, let item = decode(wire) else { return false }
    batch.append(item)
    return true
  }

  /// libdbus has parsed the message already; the decoder reads bytes, so it gets the message
  /// marshalled again (a copy). `SignalSocket` avoids both.
  /// The corresponding C function is `dbus_message_marshal`.
  func take(marshalled message: OpaquePointer) -> Bool {
    var buffer: UnsafeMutablePointer<CChar>?
    var length: Int32 = 0
    guard dbus_message_marshal(message, &buffer, &length) != 0, let buffer else { return false }
    defer { dbus_free(buffer) }
    let bytes = UnsafeRawBufferPointer(start: buffer, count: Int(length))
    guard let header = Wire.header(bytes) else { return false }
    return take(WireSignal(header: header, bytes: bytes))
  }

  func take(_ signal: Signal) { batch.append(wrap(signal)) }

  func flush() -> Bool {
    guard !batch.isEmpty else { return false }
    continuation.yield(batch)
    batch.removeAll(keepingCapacity: true)
    return true
  }

  func finish() { continuation.finish() }
}

/// What the reader threads share.
enum ReaderThread {
  /// Sleeps the calling thread (never a cooperative one: readers have threads of their own).
  static func sleep(for duration: Duration) {
    let (seconds, attoseconds) = duration.components
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
  }
}

extension DBusError {
  /// Takes the name and message out of a C `DBusError` and frees it.
  /// The corresponding C function is `dbus_error_free`.
  init(
    consuming error: inout CDBus.DBusError, fallback: ErrorName, _ context: String,
    file: String = #fileID, line: Int = #line
  ) {
    defer { dbus_error_free(&error) }
    if dbus_error_is_set(&error) != 0 {
      let name = error.name.map { String(cString: $0) } ?? fallback.rawValue
      let message = error.message.map { String(cString: $0) } ?? ""
      self.init(ErrorName(name), message.isEmpty ? context : message, file: file, line: line)
    } else {
      self.init(fallback, context, file: file, line: line)
    }
  }
}

// C callbacks: `data` is the unretained `ConnectionCore`, alive while the reader thread runs.

private func core(_ data: UnsafeMutableRawPointer?) -> ConnectionCore {
  Unmanaged<ConnectionCore>.fromOpaque(data!).takeUnretainedValue()
}

private let coreFilter: DBusHandleMessageFunction = { _, message, data in
  guard let message else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
  return core(data).filter(message)
}

private let coreAddWatch: DBusAddWatchFunction = { watch, data in
  guard let watch else { return 0 }
  core(data).addWatch(watch)
  return 1
}

private let coreRemoveWatch: DBusRemoveWatchFunction = { watch, data in
  guard let watch else { return }
  core(data).removeWatch(watch)
}

private let coreToggleWatch: DBusWatchToggledFunction = { watch, data in
  guard let watch else { return }
  core(data).toggleWatch(watch)
}

private let coreWake: DBusWakeupMainFunction = { data in
  core(data).wake()
}

private let coreDispatchStatus: DBusDispatchStatusFunction = { _, _, data in
  core(data).wake()
}
