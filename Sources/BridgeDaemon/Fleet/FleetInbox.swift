import Synchronization

/// What the fleet link acts on, in order: a message from the broker, or a bridge event that may
/// let a pending document apply (a trip ended).
enum FleetInput: Sendable {
  case message(MQTTIncoming)
  case tripEnded
  /// A paired beacon's sighting, telemetry or health changed: the beacon report may have news.
  case beaconsChanged
  /// `[Fleet] ReportInterval` passed: the beacon report goes out even without news.
  case reportDue
}

/// The fleet link's queue, made before the bridge so that the bridge's events reach it.
///
/// It loses no input that matters. Desired documents and trip ends wait in one ordered queue,
/// never dropped: each document is answered, and a trip end is what lets a pending document
/// apply. They are few (a fleet sends a document now and then, a trip ends a few times a day),
/// so the queue stays small however busy the link is. Beacon news, which comes with every
/// sighting, is folded into one flag: the report is rebuilt from the current state, so ten
/// changes need one look, not ten. The queue is served first, then a report that is due, then
/// the news.
final class FleetInbox: Sendable {
  private struct State {
    var queue: [FleetInput] = []
    var head = 0
    var reportDue = false
    var beaconsChanged = false
    var finished = false
    var waiter: CheckedContinuation<FleetInput?, Never>?
    /// Folded beacon news, for tests: how many were folded into a flag already raised.
    var folded = 0

    mutating func take() -> FleetInput? {
      if head < queue.count {
        let input = queue[head]
        head += 1
        if head == queue.count {
          queue.removeAll(keepingCapacity: queue.count <= 16)
          head = 0
        }
        return input
      }
      if reportDue {
        reportDue = false
        return .reportDue
      }
      if beaconsChanged {
        beaconsChanged = false
        return .beaconsChanged
      }
      return nil
    }
  }
  private let state = Mutex(State())

  init() {}

  func yield(_ input: FleetInput) {
    let waiter = state.withLock { state -> CheckedContinuation<FleetInput?, Never>? in
      guard !state.finished else { return nil }
      switch input {
      case .message, .tripEnded: state.queue.append(input)
      case .reportDue: state.reportDue = true
      case .beaconsChanged:
        if state.beaconsChanged { state.folded += 1 }
        state.beaconsChanged = true
      }
      guard let waiter = state.waiter else { return nil }
      state.waiter = nil
      return waiter
    }
    // The waiter takes its input itself: whatever came first in the order above.
    waiter?.resume(returning: nil)
  }

  /// The next input; nil once finished or when the caller's task is cancelled.
  func next() async -> FleetInput? {
    while !Task.isCancelled {
      let ready = state.withLock { state -> (FleetInput?, Bool) in (state.take(), state.finished) }
      if let input = ready.0 { return input }
      if ready.1 { return nil }
      _ = await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<FleetInput?, Never>) in
          let resumeNow = state.withLock { state -> Bool in
            if state.finished || state.head < state.queue.count || state.reportDue || state.beaconsChanged
              || Task.isCancelled
            {
              return true
            }
            state.waiter = continuation
            return false
          }
          if resumeNow { continuation.resume(returning: nil) }
        }
      } onCancel: {
        let waiter = state.withLock { state in
          defer { state.waiter = nil }
          return state.waiter
        }
        waiter?.resume(returning: nil)
      }
    }
    return nil
  }

  /// Ends the inbox: `next` returns nil, and later inputs are dropped (the daemon stops).
  func finish() {
    let waiter = state.withLock { state in
      state.finished = true
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume(returning: nil)
  }

  /// How many inputs wait in the ordered queue (documents and trip ends).
  var queued: Int { state.withLock { $0.queue.count - $0.head } }
  /// How many beacon news were folded into a flag already raised.
  var folded: Int { state.withLock { $0.folded } }
}
