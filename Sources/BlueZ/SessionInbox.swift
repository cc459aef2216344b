import Synchronization

/// The session's inputs (signal batches from the D-Bus reader thread, monitor calls), in order,
/// for the one task that runs the session: what an `AsyncStream` did, in a type of our own.
///
/// `AsyncStream` is generic code in the standard library, not specialized for the element: every
/// `yield` and `next` looked up generic metadata in the runtime (`Optional`, `Array`,
/// `UnsafeContinuation`, …) and shifted its waiter array with an unspecialized `removeFirst`,
/// about 11,000 instructions per batch (callgrind), several hundred per advertisement
/// at 500 a second. Here the element type is concrete: a lock, an array and one continuation.
///
/// Same contract as the stream it replaces: elements arrive in the order yielded; after
/// `finish` (or the consumer task's cancellation) further yields are dropped, what was buffered
/// is still handed out, and then `next` returns nil for good.
final class SessionInbox<Element: Sendable>: Sendable {
  private struct State {
    var queue: [Element] = []
    /// The consumer, parked while the queue is empty.
    var waiter: UnsafeContinuation<Element?, Never>?
    var finished = false
  }
  private let state = Mutex(State())

  init() {}

  /// Hands `element` to the waiting consumer or queues it; dropped once finished.
  func yield(_ element: Element) {
    let waiter = state.withLock { state -> UnsafeContinuation<Element?, Never>? in
      guard !state.finished else { return nil }
      if let waiter = state.waiter {
        // A parked consumer means the queue is empty: order holds.
        state.waiter = nil
        return waiter
      }
      state.queue.append(element)
      return nil
    }
    waiter?.resume(returning: element)
  }

  /// Whether the consumer has taken everything yielded so far (or the inbox has ended): the
  /// reader's backpressure (`SignalSocket`'s `ready`).
  var isDrained: Bool { state.withLock { $0.queue.isEmpty || $0.finished } }

  /// Whether the consumer is parked in `next`, waiting for an element: for tests that must know
  /// a yield or `finish` reaches a waiting consumer, not one yet to arrive.
  var hasParkedConsumer: Bool { state.withLock { $0.waiter != nil } }

  /// Ends the inbox: the consumer gets what is queued, then nil.
  func finish() {
    let waiter = state.withLock { state -> UnsafeContinuation<Element?, Never>? in
      state.finished = true
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume(returning: nil)
  }

  /// The next element, waiting for one; nil once finished and drained, or when the calling task
  /// is cancelled. One consumer at a time.
  ///
  /// The consumer resumes in its own isolation: a session that runs on its consumer's actor
  /// (`AdvertisementSource.run`) costs one job on that actor per element, not a hop to the global
  /// executor and another back.
  func next(isolation: isolated (any Actor)? = #isolation) async -> Element? {
    if let ready = state.withLock({ $0.queue.isEmpty ? nil : $0.queue.removeFirst() }) { return ready }
    return await withTaskCancellationHandler {
      await withUnsafeContinuation(isolation: isolation) {
        (continuation: UnsafeContinuation<Element?, Never>) in
        let now = state.withLock { state -> Element?? in
          if !state.queue.isEmpty { return .some(state.queue.removeFirst()) }
          if state.finished { return .some(nil) }
          state.waiter = continuation
          return .none
        }
        if let now { continuation.resume(returning: now) }
      }
    } onCancel: {
      finish()
    }
  }
}
