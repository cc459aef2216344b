import CDBus
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A connection of its own for one high-rate subscription, whose socket is read without libdbus.
///
/// libdbus costs more per message than a whole scan should: it copies each message out of its
/// read buffer, validates it, allocates a `DBusMessage`, takes its locks several times, and reads
/// values through a generic type reader (measured: about 1.5 CPU s per 100,000 BlueZ
/// PropertiesChanged at 2,000/s for a C program that only pops and frees them). A scanner needs
/// only signals on this connection, so it speaks the protocol itself: SASL EXTERNAL, `Hello` and
/// `AddMatch` (built with libdbus's marshaller), then a reader thread that reads the socket in
/// large chunks every `batchInterval`, frames messages by their fixed header, and lets `decode`
/// read the hot signal in place. Any other signal is handed to libdbus
/// (`dbus_message_demarshal`) and arrives as a generic `Signal`.
///
/// Only `unix:` addresses (path or abstract) are supported; `open` throws `.notSupported` for
/// others, and the caller subscribes on a `Connection` instead. Match rules die with the socket,
/// so cancelling needs no RemoveMatch.
public final class SignalSocket<Decoded: Sendable>: Sendable {
  public let batches: AsyncStream<[SignalItem<Decoded>]>
  /// This connection's unique name, from `Hello`.
  public let uniqueName: BusName
  /// Signals read past the read-ahead bound while the consumer held its batch, and not handed on.
  public let dropped: EventCount
  /// Bytes of signals read ahead while the consumer holds a batch: 2 MiB, about 6 s of BlueZ's
  /// PropertiesChanged at 2,000 a second (about 170 bytes each).
  public static var defaultReadAhead: Int { 2 << 20 }
  @usableFromInline let reader: SignalSocketReader

  /// Connects, authenticates, says `Hello` and adds `rules`, waiting for the bus to accept each.
  ///
  /// `@inlinable` so that the batch (`SignalBatch`) is specialized for `Decoded` in the caller's
  /// module: generic code in this module looked up `Optional<Decoded>`, `SignalItem<Decoded>` and
  /// `Array<…>` metadata in the runtime for every signal, about 1,000 instructions each (callgrind).
  ///
  /// With `deliver`, each batch is handed to it on the reader thread instead of to `batches`
  /// (which then only ends), and `finished` is called once the reader has stopped: a consumer
  /// that merges batches into a stream of its own saves a task hop per batch, and a task to
  /// watch `batches` end.
  ///
  /// With `ready`, no batch is handed on while it returns false (the consumer still holds what
  /// it was given, awaiting a call, say). The reader goes on reading meanwhile, into the next
  /// batch, because the bus holds only about 170 signals for a connection and drops what does
  /// not fit (docs/dbus-notes.md): up to `readAhead` bytes of signals are kept, and those past it
  /// are counted in `dropped` and not decoded. The batch is handed on at the first pass `ready`
  /// says yes, once per `batchInterval` (at least 10 ms) at the latest. Jobs still run meanwhile
  /// (`executor`).
  @inlinable public init(
    _ bus: BusAddress, rules: [MatchRule], batchInterval: Duration = .milliseconds(50),
    setupTimeout: Duration = .seconds(5), decode: @escaping @Sendable (borrowing WireSignal) -> Decoded?,
    deliver: (@Sendable ([SignalItem<Decoded>]) -> Void)? = nil, ready: (@Sendable () -> Bool)? = nil,
    finished: (@Sendable () -> Void)? = nil, readAhead: Int = SignalSocket.defaultReadAhead,
    dropped: EventCount = EventCount()
  ) throws(DBusError) {
    let (stream, continuation) = AsyncStream.makeStream(of: [SignalItem<Decoded>].self)
    let batch = SignalBatch(continuation: continuation, decode: decode, deliver: deliver)
    let sink = SignalSocketSink(
      take: { batch.take($0) }, takeSignal: { batch.items.append(.signal($0)) }, flush: { batch.flush() },
      finish: {
        continuation.finish()
        finished?()
      }, ready: ready ?? { true })
    let (reader, name) = try SignalSocketReader.open(
      bus, rules: rules, batchInterval: batchInterval, setupTimeout: setupTimeout, sink: sink,
      readAhead: readAhead, dropped: dropped)
    self.reader = reader
    self.dropped = dropped
    self.uniqueName = name
    self.batches = stream
    continuation.onTermination = { [reader] _ in reader.stop() }
    reader.start()
  }

  /// Closes the socket (the bus drops the match rules with it) and ends `batches`.
  public func cancel() { reader.stop() }

  deinit { reader.stop() }

  /// Counters, for measuring how well it batches.
  public var wakeUps: Int { reader.wakeUps.load(ordering: .relaxed) }

  /// The reader thread as a task executor (`SignalSocket+Executor.swift`): a consumer that prefers
  /// it runs between the reader's passes, on the same thread.
  public var executor: any TaskExecutor { reader }
}

/// A pass's decoded items, gathered on the reader thread and handed on by `flush`.
/// `@unchecked Sendable`: touched only by the reader thread.
@usableFromInline final class SignalBatch<Decoded: Sendable>: @unchecked Sendable {
  /// Unchecked: only the reader thread touches it, one call at a time (the runtime's
  /// exclusivity check cost about 150 instructions per signal).
  @exclusivity(unchecked) @usableFromInline var items: [SignalItem<Decoded>] = []
  @usableFromInline let continuation: AsyncStream<[SignalItem<Decoded>]>.Continuation
  @usableFromInline let decode: @Sendable (borrowing WireSignal) -> Decoded?
  @usableFromInline let deliver: (@Sendable ([SignalItem<Decoded>]) -> Void)?

  @inlinable init(
    continuation: AsyncStream<[SignalItem<Decoded>]>.Continuation,
    decode: @escaping @Sendable (borrowing WireSignal) -> Decoded?,
    deliver: (@Sendable ([SignalItem<Decoded>]) -> Void)?
  ) {
    self.continuation = continuation
    self.decode = decode
    self.deliver = deliver
  }

  /// Decodes `wire` into the batch; false if the decoder declined it.
  @inlinable func take(_ wire: borrowing WireSignal) -> Bool {
    guard let item = decode(wire) else { return false }
    // Moved in: a copy cost a retain of the item's storage here and a release of the original.
    items.append(.decoded(consume item))
    return true
  }

  @inlinable func flush() {
    guard !items.isEmpty else { return }
    if let deliver { deliver(items) } else { continuation.yield(items) }
    items.removeAll(keepingCapacity: true)
  }
}

/// What the (non-generic) reader hands each message to: closures made where `Decoded` is known.
@usableFromInline struct SignalSocketSink {
  let take: (borrowing WireSignal) -> Bool
  let takeSignal: (Signal) -> Void
  let flush: () -> Void
  let finish: () -> Void
  let ready: () -> Bool

  @usableFromInline init(
    take: @escaping (borrowing WireSignal) -> Bool, takeSignal: @escaping (Signal) -> Void,
    flush: @escaping () -> Void, finish: @escaping () -> Void, ready: @escaping () -> Bool
  ) {
    self.take = take
    self.takeSignal = takeSignal
    self.flush = flush
    self.finish = finish
    self.ready = ready
  }
}

/// The reader thread of a `SignalSocket`. `@unchecked Sendable`: the buffer and batch are touched
/// only by `setUp` (before the thread starts) and then by the thread; the rest is atomic.
@usableFromInline final class SignalSocketReader: @unchecked Sendable {
  let fd: Int32
  let batchInterval: Duration
  let sink: SignalSocketSink
  let wakeFD: Int32
  let wakeWriteFD: Int32
  /// The most bytes of signals held for the consumer (`SignalSocket.init`'s `readAhead`).
  let readAhead: Int
  /// Signals past `readAhead`, not handed on.
  let dropped: EventCount
  /// Bytes of the signals in the batch not yet handed on.
  private var held = 0
  private let stopping = Atomic<Bool>(false)
  private let done = DispatchSemaphore(value: 0)
  private let started = Atomic<Bool>(false)
  @usableFromInline let wakeUps = Atomic<Int>(0)
  /// Jobs of tasks that prefer this thread (`SignalSocket+Executor.swift`).
  let queue = Mutex(JobQueue())

  /// `rules` as they are checked for every signal.
  private let compiled: CompiledRules

  /// Received bytes not yet framed: `buffer[0..<filled]`.
  private var buffer: UnsafeMutableRawBufferPointer
  private var filled = 0
  /// Replies awaited during set-up, by serial.
  private var awaiting: [UInt32: MemberName] = [:]
  private var setUpFailure: DBusError?
  private var helloName: String?

  /// Connects, authenticates, says `Hello` and adds `rules`; the reader and the unique name.
  @usableFromInline static func open(
    _ bus: BusAddress, rules: [MatchRule], batchInterval: Duration, setupTimeout: Duration,
    sink: SignalSocketSink, readAhead: Int, dropped: EventCount
  ) throws(DBusError) -> (SignalSocketReader, BusName) {
    let address = try bus.resolve()
    let fd = try SocketSetup.connect(address)
    let reader = SignalSocketReader(
      fd: fd, rules: rules, batchInterval: batchInterval, sink: sink, readAhead: readAhead, dropped: dropped)
    do {
      try SocketSetup.authenticate(fd, timeout: setupTimeout)
      return (reader, try reader.setUp(rules: rules, timeout: setupTimeout))
    } catch {
      reader.closeUnstarted()
      throw error
    }
  }

  init(
    fd: Int32, rules: [MatchRule], batchInterval: Duration, sink: SignalSocketSink, readAhead: Int,
    dropped: EventCount
  ) {
    self.fd = fd
    self.batchInterval = batchInterval
    self.sink = sink
    self.readAhead = readAhead
    self.dropped = dropped
    var pipeFDs: [Int32] = [-1, -1]
    if pipe(&pipeFDs) != 0 { pipeFDs = [-1, -1] }
    for pipeFD in pipeFDs where pipeFD >= 0 {
      _ = fcntl(pipeFD, F_SETFD, FD_CLOEXEC)
      _ = fcntl(pipeFD, F_SETFL, O_NONBLOCK)
    }
    wakeFD = pipeFDs[0]
    wakeWriteFD = pipeFDs[1]
    buffer = .allocate(byteCount: Self.chunk * 4, alignment: 8)
    compiled = CompiledRules(rules)
  }

  deinit { buffer.deallocate() }

  /// Whether any rule matches. The rule that matched last is tried first: a scan's signals are
  /// nearly all one kind.
  private func matches(_ header: Wire.Header, _ bytes: UnsafeRawBufferPointer) -> Bool {
    if lastMatch < compiled.count, compiled.matches(lastMatch, header, bytes) { return true }
    for index in 0..<compiled.count where index != lastMatch && compiled.matches(index, header, bytes) {
      lastMatch = index
      return true
    }
    return false
  }
  /// The index in `compiled` of the rule that matched last.
  private var lastMatch = 0

  /// Bytes asked of the kernel per read.
  static var chunk: Int { 64 * 1024 }
  /// Bytes read per pass at most (about 1,000 BlueZ PropertiesChanged).
  static var passLimit: Int { 256 * 1024 }
  /// A read of at least this many bytes is followed by another before the batch is handed on.
  static var refill: Int { 8 * 1024 }
  /// Set once set-up is over and the socket no longer blocks.
  private var nonBlocking = false

  /// Hello, then AddMatch for each rule, each answered before this returns.
  func setUp(rules: [MatchRule], timeout: Duration) throws(DBusError) -> BusName {
    var serial: UInt32 = 0
    var out: [UInt8] = []
    for (member, arguments) in [(MemberName("Hello"), [DBusValue]())]
      + rules.map({ ("AddMatch", [.string($0.rawValue)]) })
    {
      serial += 1
      awaiting[serial] = member
      out += try SocketSetup.busCall(member, arguments, serial: serial)
    }
    try SocketSetup.write(fd, out)
    let deadline = ContinuousClock.now + timeout
    while !awaiting.isEmpty {
      try SocketSetup.waitReadable(fd, until: deadline)
      guard readAvailable().open else {
        throw DBusError(.disconnected, "the bus closed the connection during set-up")
      }
      try frame()
      if let setUpFailure { throw setUpFailure }
    }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    nonBlocking = true
    return BusName(helloName ?? "")
  }

  @usableFromInline func start() {
    started.store(true, ordering: .releasing)
    OSThread.detach(name: "dbus-signal-stream") { [self] in run() }
  }

  /// For a reader whose set-up failed: nothing runs, so close here.
  func closeUnstarted() {
    close(fd)
    closeQueue()
    sink.finish()
  }

  @usableFromInline func stop() {
    guard started.load(ordering: .acquiring), !stopping.exchange(true, ordering: .acquiringAndReleasing)
    else {
      return
    }
    ring()
    // The reader thread itself (a job it runs dropped the socket) must not wait for itself: it
    // stops after that job.
    if onReaderThread { return }
    done.wait()
    done.signal()  // later callers return at once
  }

  /// Waits until the socket is readable (`socket`) or `deadline` passes, running queued jobs
  /// meanwhile; false once stopping.
  private func wait(socket: Bool, until deadline: ContinuousClock.Instant?) -> Bool {
    var fds = [
      pollfd(fd: socket ? fd : -1, events: Int16(POLLIN), revents: 0),
      pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0),
    ]
    while true {
      runJobs()
      if stopping.load(ordering: .acquiring) { return false }
      var timeout: Int32 = -1
      if let deadline {
        let left = ContinuousClock.now.duration(to: deadline)
        if left <= .zero { return true }
        let (seconds, attoseconds) = left.components
        // Rounded up: waking a little early would only wait again.
        timeout = Int32(seconds * 1_000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
      }
      guard park() else { continue }
      fds[0].revents = 0
      fds[1].revents = 0
      let ready = poll(&fds, 2, timeout)
      unpark()
      if ready < 0 {
        if errno == EINTR { continue }
        return false
      }
      if ready == 0 { continue }
      wakeUps.add(1, ordering: .relaxed)
      if fds[1].revents != 0 {
        var sink = [UInt8](repeating: 0, count: 64)
        while read(wakeFD, &sink, sink.count) > 0 {}
      }
      if socket, fds[0].revents != 0 { return true }
    }
  }

  private func run() {
    queue.withLock { $0.thread = pthread_self() }
    flush()
    // While a batch waits for the consumer, the thread wakes once per interval to hand it on.
    let retry = max(batchInterval, .milliseconds(10))
    loop: while wait(socket: true, until: held > 0 ? .now + retry : nil) {
      var (open, drained, taken) = readAvailable()
      var passBytes = taken
      do {
        try frame()
        // A unix socket holds about 170 small signals (the bus's send buffer: 80 ms of a
        // 2,000/s stream, docs/dbus-notes.md), and flat out the bus refills it while we frame:
        // while a read found at least `refill` bytes, read again into the same batch, so that a
        // busy bus gives larger batches, not more of them.
        while open, drained, taken >= Self.refill, passBytes < Self.passLimit {
          (open, drained, taken) = readAvailable()
          passBytes += taken
          try frame()
        }
      } catch {
        break loop
      }
      // Backpressure (`ready`): the batch stays here, growing up to `readAhead`, while the
      // consumer still holds the last one.
      if sink.ready() { flush() }
      // What the batch resumed (a consumer that prefers this thread) runs now, before any wait.
      runJobs()
      if !open { break }
      // A pass stops after `passLimit` bytes; only an emptied socket waits for the next batch,
      // running jobs meanwhile.
      if drained, batchInterval > .zero, !wait(socket: false, until: .now + batchInterval) { break }
    }
    stopping.store(true, ordering: .releasing)
    close(fd)
    // What was read is the consumer's, ready or not.
    flush()
    sink.finish()
    // What finishing resumed, and anything queued since, runs elsewhere from now on.
    runJobs()
    closeQueue()
    done.signal()
  }

  /// Reads what the socket holds now, up to `passLimit` bytes: `open` is false once the bus has
  /// closed it, `drained` true when nothing was left. Bounding a pass keeps a flood from growing
  /// the buffer and the batch without limit.
  private func readAvailable() -> (open: Bool, drained: Bool, taken: Int) {
    var taken = 0
    while true {
      if nonBlocking, taken >= Self.passLimit { return (true, false, taken) }
      if buffer.count - filled < Self.chunk {
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: buffer.count * 2, alignment: 8)
        bigger.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[0..<filled]))
        buffer.deallocate()
        buffer = bigger
      }
      let count = recv(fd, buffer.baseAddress! + filled, buffer.count - filled, 0)
      if count > 0 {
        filled += count
        taken += count
        // In set-up (blocking) one read is enough; the loop asks again.
        if !nonBlocking { return (true, false, taken) }
        continue
      }
      if count == 0 { return (false, true, taken) }
      if errno == EINTR { continue }
      return (errno == EAGAIN || errno == EWOULDBLOCK, true, taken)
    }
  }

  /// Frames every complete message in the buffer and handles it; keeps a partial one.
  private func frame() throws(DBusError) {
    var offset = 0
    while true {
      let rest = UnsafeRawBufferPointer(rebasing: buffer[offset..<filled])
      guard let length = try Wire.messageLength(rest), length <= rest.count else { break }
      handle(UnsafeRawBufferPointer(rebasing: rest[0..<length]))
      offset += length
    }
    if offset > 0 {
      let remaining = filled - offset
      if remaining > 0 {
        (buffer.baseAddress!).copyMemory(from: buffer.baseAddress! + offset, byteCount: remaining)
      }
      filled = remaining
    }
  }

  private func handle(_ bytes: UnsafeRawBufferPointer) {
    guard let header = Wire.header(bytes) else {
      generic(bytes)
      return
    }
    switch header.type {
    case Wire.MessageType.signal.rawValue:
      guard matches(header, bytes) else { return }
      take(bytes) { sink.take(WireSignal(header: header, bytes: bytes)) }
    case Wire.MessageType.methodReturn.rawValue, Wire.MessageType.error.rawValue:
      guard let serial = header.replySerial, let member = awaiting.removeValue(forKey: serial) else { return }
      if header.type == Wire.MessageType.error.rawValue {
        let name = header.errorName?.string ?? ErrorName.failed.rawValue
        var body = WireSignal(header: header, bytes: bytes).body
        let text = header.signature?.first == UInt8(ascii: "s") ? body.string()?.string ?? "" : ""
        setUpFailure = DBusError(ErrorName(name), "\(member) failed: \(text)")
      } else if member.rawValue == "Hello" {
        var body = WireSignal(header: header, bytes: bytes).body
        helloName = body.string()?.string
      }
    default:
      break
    }
  }

  /// A signal the decoder declined: libdbus reads it into a generic `Signal`.
  /// The corresponding C function is `dbus_message_demarshal`.
  private func generic(_ bytes: UnsafeRawBufferPointer) {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    guard
      let message = dbus_message_demarshal(
        bytes.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(bytes.count), &error)
    else {
      dbus_error_free(&error)
      return
    }
    defer { dbus_message_unref(message) }
    guard dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_SIGNAL, compiled.matches(message) else {
      return
    }
    sink.takeSignal(MessageReader.signal(of: message))
  }

  private func flush() {
    sink.flush()
    held = 0
  }

  /// Hands a matched signal of `bytes` on (`decode`, or else libdbus). Once the batch holds
  /// `readAhead` bytes it is handed on first if the consumer is ready; if not, the signal is
  /// counted in `dropped` instead.
  @inline(__always) private func take(_ bytes: UnsafeRawBufferPointer, _ decode: () -> Bool) {
    if held >= readAhead {
      guard sink.ready() else {
        dropped.add()
        return
      }
      flush()
    }
    held &+= bytes.count
    if !decode() { generic(bytes) }
  }

}
