import CDBus
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// One subscription's signals, gathered during a reader pass.
protocol SignalSink: AnyObject, Sendable {
  /// The subscription's rules, as the reader checks each signal against them.
  var rules: CompiledRules { get }
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
  let rules: CompiledRules
  let continuation: AsyncStream<[Item]>.Continuation
  let wrap: @Sendable (Signal) -> Item
  let decode: (@Sendable (borrowing WireSignal) -> Item?)?
  private var batch: [Item] = []

  init(
    rules: [MatchRule], continuation: AsyncStream<[Item]>.Continuation,
    wrap: @escaping @Sendable (Signal) -> Item,
    decode: (@Sendable (borrowing WireSignal) -> Item?)?
  ) {
    self.rules = CompiledRules(rules)
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
