import Synchronization

/// A private connection to a message bus, with its own reader thread.
///
/// ```swift
/// let bus = try Connection(.system)
/// let names = try await bus.listNames()
/// ```
///
/// The connection is closed by `close()` or when the last reference goes away. See
/// `ConnectionCore` for the threading model.
public final class Connection: Sendable {
  let core: ConnectionCore
  /// Where this connection went.
  public let address: String

  /// Tuning for the reader thread.
  public struct Options: Sendable {
    /// After each wake-up, the reader sleeps this long before polling again, so that a busy bus
    /// is read in batches of this span instead of one wake-up per message. Zero (the default)
    /// wakes at once; replies then wait at most this long.
    public var batchInterval: Duration
    public init(batchInterval: Duration = .zero) { self.batchInterval = batchInterval }
  }

  /// Counters of the reader thread, for measuring how well it batches.
  public struct Statistics: Sendable, Hashable {
    /// Times the reader returned from `poll(2)`.
    public var wakeUps: Int
    /// `dbus_watch_handle` calls for reading.
    public var socketReads: Int
    /// Messages passed through the filter (replies, signals, calls).
    public var messagesDispatched: Int
    /// Signal arrays handed to subscribers.
    public var signalBatches: Int
  }

  /// Connects to `bus` and says `Hello`. Blocks until the bus answers (local socket: a few ms).
  /// The corresponding C functions are `dbus_connection_open_private` and `dbus_bus_register`.
  public init(_ bus: BusAddress, options: Options = Options()) throws(DBusError) {
    address = try bus.resolve()
    core = try ConnectionCore(address: address, batchInterval: options.batchInterval)
    try core.start()
  }

  deinit { core.closeAndWait() }

  /// This connection's unique name on the bus, such as `:1.7`.
  public var uniqueName: BusName { core.uniqueName }

  /// Whether the connection was closed, by `close()` or by the bus.
  public var isClosed: Bool { core.isClosed }

  public var statistics: Statistics {
    Statistics(
      wakeUps: core.wakeUps.load(ordering: .relaxed), socketReads: core.socketReads.load(ordering: .relaxed),
      messagesDispatched: core.messagesDispatched.load(ordering: .relaxed),
      signalBatches: core.signalBatches.load(ordering: .relaxed))
  }

  /// Closes the connection: pending calls fail with `Disconnected`, signal streams finish. Waits
  /// until the reader thread has freed the `DBusConnection`.
  /// The corresponding C function is `dbus_connection_close`.
  public func close() { core.closeAndWait() }

  /// The default timeout of libdbus (DBUS_TIMEOUT_USE_DEFAULT is 25 s).
  public static let defaultTimeout: Duration = .seconds(25)

  /// Calls a method and returns the reply's body.
  ///
  /// Throws `DBusError` with the remote error's name and message, `.noReply` on timeout,
  /// `.disconnected` if the connection closes first, or `CancellationError`.
  /// The corresponding C function is `dbus_connection_send` (replies are matched by serial on the
  /// reader thread; libdbus's `DBusPendingCall` is not used).
  public func call(
    destination: BusName?, path: ObjectPath, interface: InterfaceName?, member: MemberName,
    _ arguments: [DBusValue] = [], timeout: Duration = Connection.defaultTimeout
  ) async throws -> [DBusValue] {
    try await send(
      destination: destination, path: path, interface: interface, member: member, arguments, timeout: timeout
    ) { .values($0) }
  }

  /// Calls a method and reads its reply in place with `decode`, which runs on the reader thread
  /// while the reply is there, over the reply's bytes (`WireMessage`), and returns what it
  /// makes of them. For large replies (`GetManagedObjects` with a thousand devices): no
  /// `DBusValue` tree of the whole reply is built, so none is left to free.
  ///
  /// Throws what `call` throws, or what `decode` throws.
  public func call<T: Sendable>(
    destination: BusName?, path: ObjectPath, interface: InterfaceName?, member: MemberName,
    _ arguments: [DBusValue] = [], timeout: Duration = Connection.defaultTimeout,
    decoding decode: @escaping @Sendable (borrowing WireMessage) throws -> T
  ) async throws -> T {
    try await send(
      destination: destination, path: path, interface: interface, member: member, arguments, timeout: timeout
    ) { .decoding(decode, $0) }
  }

  /// Both `call`s: sends the call and parks the reply `pending` makes of the continuation.
  private func send<T: Sendable>(
    destination: BusName?, path: ObjectPath, interface: InterfaceName?, member: MemberName,
    _ arguments: [DBusValue], timeout: Duration,
    reply pending: (CheckedContinuation<T, any Error>) -> ConnectionCore.PendingReply
  ) async throws -> T {
    let message = try Message.methodCall(
      destination: destination, path: path, interface: interface, member: member)
    try message.append(arguments)
    let id = core.reserveCall()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        core.send(message, id: id, timeout: timeout, reply: pending(continuation))
      }
    } onCancel: {
      core.finishCall(id, error: CancellationError())
    }
  }

  /// Calls a method whose reply is one value and returns that value.
  public func callReturningOne(
    destination: BusName?, path: ObjectPath, interface: InterfaceName?, member: MemberName,
    _ arguments: [DBusValue] = [], timeout: Duration = Connection.defaultTimeout
  ) async throws -> DBusValue {
    let body = try await call(
      destination: destination, path: path, interface: interface, member: member, arguments, timeout: timeout)
    guard let first = body.first else {
      throw DBusError(.invalidArgs, "\(interface?.rawValue ?? "").\(member) returned nothing")
    }
    return first
  }

  /// Sends a signal from this connection: to every connection whose match rules take it, or,
  /// with `destination`, to that one only (the bus then delivers it whatever its rules say).
  /// The corresponding C functions are `dbus_message_new_signal` and `dbus_message_set_destination`.
  public func emit(
    path: ObjectPath, interface: InterfaceName, member: MemberName, _ body: [DBusValue] = [],
    to destination: BusName? = nil
  ) throws(DBusError) {
    let message = try Message.signal(
      path: path, interface: interface, member: member, destination: destination)
    try message.append(body)
    try core.sendNoReply(message)
  }

  /// Subscribes to the signals matching any of `rules`, in one stream that keeps their order.
  ///
  /// The subscription is registered locally before `AddMatch` is sent, so nothing that the bus
  /// routes after this returns is missed. Signals arrive in arrays: one per reader pass.
  public func subscribe(to rules: [MatchRule]) async throws -> SignalSubscription {
    let (id, stream) = core.addSubscriber(rules: rules, wrap: { $0 })
    return try await register(id: id, rules: rules, stream: stream)
  }

  /// Subscribes like `subscribe(to:)`, but lets `decode` read each matching signal's bytes first,
  /// on the reader thread, without building `DBusValue`s. Signals it declines (returns nil for)
  /// arrive as `.signal`. Over libdbus each decoded signal is marshalled again for the decoder;
  /// `SignalSocket` reads the socket itself and skips that copy.
  public func subscribe<Decoded: Sendable>(
    to rules: [MatchRule], decoding decode: @escaping @Sendable (borrowing WireSignal) -> Decoded?
  ) async throws -> Subscription<SignalItem<Decoded>> {
    let (id, stream) = core.addSubscriber(
      rules: rules, wrap: { SignalItem<Decoded>.signal($0) },
      decode: { raw in decode(raw).map { .decoded($0) } })
    return try await register(id: id, rules: rules, stream: stream)
  }

  private func register<Item: Sendable>(id: UInt64, rules: [MatchRule], stream: AsyncStream<[Item]>)
    async throws -> Subscription<Item>
  {
    guard id != 0 else { throw DBusError(.disconnected, "connection closed") }
    var added: [MatchRule] = []
    do {
      for rule in rules {
        try await addMatch(rule)
        added.append(rule)
      }
    } catch {
      core.removeSubscriber(id)
      for rule in added { try? removeMatchNoReply(rule) }
      throw error
    }
    return Subscription(connection: self, id: id, rules: rules, batches: stream)
  }

  /// Subscribes to one rule.
  public func subscribe(to rule: MatchRule) async throws -> SignalSubscription {
    try await subscribe(to: [rule])
  }

  // MARK: org.freedesktop.DBus

  /// The corresponding bus method is `org.freedesktop.DBus.AddMatch`.
  public func addMatch(_ rule: MatchRule) async throws {
    _ = try await busCall("AddMatch", [.string(rule.rawValue)])
  }

  /// The corresponding bus method is `org.freedesktop.DBus.RemoveMatch`.
  public func removeMatch(_ rule: MatchRule) async throws {
    _ = try await busCall("RemoveMatch", [.string(rule.rawValue)])
  }

  func removeMatchNoReply(_ rule: MatchRule) throws(DBusError) {
    let message = try Message.methodCall(
      destination: .bus, path: "/org/freedesktop/DBus", interface: .bus, member: "RemoveMatch")
    try message.append([.string(rule.rawValue)])
    try core.sendNoReply(message)
  }

  /// The unique name owning `name`; throws `NameHasNoOwner` if none.
  public func nameOwner(of name: BusName) async throws -> BusName {
    let reply = try await busCall("GetNameOwner", [.string(name.rawValue)])
    guard let owner = reply.first?.string else { throw DBusError(.invalidArgs, "GetNameOwner: bad reply") }
    return BusName(owner)
  }

  /// The user ID of the process that owns `name`, as the bus learnt it from the socket's
  /// credentials (`GetConnectionUnixUser`): who is calling, told by the bus, not by the caller.
  public func unixUser(of name: BusName) async throws -> UInt32 {
    let reply = try await busCall("GetConnectionUnixUser", [.string(name.rawValue)])
    guard let uid = reply.first?.uint32 else {
      throw DBusError(.invalidArgs, "GetConnectionUnixUser: bad reply")
    }
    return uid
  }

  /// Every name on the bus.
  public func listNames() async throws -> [BusName] {
    let reply = try await busCall("ListNames")
    return (reply.first?.strings ?? []).map { BusName($0) }
  }

  /// The result of `RequestName` (dbus-shared.h, DBUS_REQUEST_NAME_REPLY_*).
  public enum RequestNameReply: UInt32, Sendable {
    case primaryOwner = 1, inQueue, exists, alreadyOwner
  }

  /// Asks the bus for a well-known name. Flags: dbus-shared.h DBUS_NAME_FLAG_* (4 = do not queue).
  public func requestName(_ name: BusName, flags: UInt32 = 4) async throws -> RequestNameReply {
    let reply = try await busCall("RequestName", [.string(name.rawValue), .uint32(flags)])
    guard let code = reply.first?.uint32, let value = RequestNameReply(rawValue: code) else {
      throw DBusError(.invalidArgs, "RequestName: bad reply")
    }
    return value
  }

  private func busCall(_ member: MemberName, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
    try await call(
      destination: .bus, path: "/org/freedesktop/DBus", interface: .bus, member: member, arguments,
      timeout: .seconds(25))
  }
}

/// A signal as a decoding subscription delivers it: read by its decoder, or generic.
public enum SignalItem<Decoded: Sendable>: Sendable {
  case decoded(Decoded)
  case signal(Signal)
}

/// Signals for a set of match rules.
public typealias SignalSubscription = Subscription<Signal>

/// Items for a set of match rules. Cancel it to remove the rules from the bus; dropping it
/// removes them too, without waiting.
public final class Subscription<Item: Sendable>: Sendable {
  private let connection: Connection
  private let id: UInt64
  public let rules: [MatchRule]
  /// The items, one array per reader pass, in bus order.
  public let batches: AsyncStream<[Item]>
  private let cancelled = Mutex(false)

  init(connection: Connection, id: UInt64, rules: [MatchRule], batches: AsyncStream<[Item]>) {
    self.connection = connection
    self.id = id
    self.rules = rules
    self.batches = batches
  }

  /// Stops local delivery, then removes the match rules from the bus (waiting for the bus to
  /// acknowledge; errors, such as a closed connection, are ignored).
  public func cancel() async {
    guard markCancelled() else { return }
    connection.core.removeSubscriber(id)
    for rule in rules { try? await connection.removeMatch(rule) }
  }

  private func markCancelled() -> Bool {
    cancelled.withLock { done in
      defer { done = true }
      return !done
    }
  }

  deinit {
    guard markCancelled() else { return }
    connection.core.removeSubscriber(id)
    for rule in rules { try? connection.removeMatchNoReply(rule) }
  }
}
