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
