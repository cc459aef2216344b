import CDBus
import Dispatch
import FoundationEssentials
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

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

  /// Up to this many items, the array's capacity is kept for the next pass. A larger one (a
  /// burst: a flood of new devices) is let go, or its capacity would stay for good, and while the
  /// consumer still holds the batch just handed on, keeping it allocates that size again on
  /// every pass.
  @inlinable static var keptCapacity: Int { 1024 }

  @inlinable func flush() {
    guard !items.isEmpty else { return }
    if let deliver { deliver(items) } else { continuation.yield(items) }
    items.removeAll(keepingCapacity: items.capacity <= Self.keptCapacity)
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
