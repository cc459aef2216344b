// The bridge's deadline loop: when it sleeps, when it parks, and what wakes it.

extension BeaconBridge {
  /// Ticks deadlines until the task is cancelled, without waking on a period when idle.
  /// - While a beacon is tracked, every sighting may move its exit deadline closer without
  ///   waking this loop, so deadlines are checked when due and at least once a second (presence
  ///   needs no sub-second latency).
  /// - Otherwise the loop parks until the next deadline (a trip's late window, a batch's retry,
  ///   a paired beacon's silence), or for good when there is none. A sighting, a trip call or a
  ///   reload that brings a deadline closer wakes it (`wakeDeadlines`).
  public func runDeadlines() async throws {
    while !Task.isCancelled {
      let now = self.now
      let due = nextDeadline
      if let due, pipeline.tracker.isTracking || due <= now + 1 {
        try await clock.sleep(min(max(due, now), now + 1))
      } else {
        await park(.deadlines, until: due)
        try Task.checkCancellation()
      }
      await tick()
    }
  }

  /// One of the bridge's own loops (`runDeadlines`, `runPosting`), which park until a time, a
  /// wake-up or their cancellation.
  enum Loop {
    case deadlines
    case posting
  }

  struct ParkedLoop {
    let continuation: CheckedContinuation<Void, Never>
    let until: Timestamp?
    let id: UInt64
  }

  /// Parks `loop` until `due` (for good when nil), `unpark(loop)` or the task's cancellation.
  func park(_ loop: Loop, until due: Timestamp?) async {
    parkCount &+= 1
    let id = parkCount
    var timer: Task<Void, Never>?
    await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        if Task.isCancelled {
          continuation.resume()
          return
        }
        self[parked: loop] = ParkedLoop(continuation: continuation, until: due, id: id)
        if let due {
          timer = Task { [clock] in
            try? await clock.sleep(due)
            self.unpark(loop, id)
          }
        }
      }
    } onCancel: {
      Task { await self.unpark(loop) }
    }
    timer?.cancel()
  }

  /// Resumes the parked `loop`: the parking numbered `id`, or any when nil.
  func unpark(_ loop: Loop, _ id: UInt64? = nil) {
    guard let current = self[parked: loop], id == nil || current.id == id else { return }
    self[parked: loop] = nil
    current.continuation.resume()
  }

  subscript(parked loop: Loop) -> ParkedLoop? {
    get {
      switch loop {
      case .deadlines: parked
      case .posting: poster
      }
    }
    set {
      switch loop {
      case .deadlines: parked = newValue
      case .posting: poster = newValue
      }
    }
  }

  /// Wakes a parked deadline loop when something came due sooner than it waits for, or a beacon
  /// is now tracked. Cheap while the loop runs (one nil check); `nextDeadline` is only computed
  /// while it is parked.
  func wakeDeadlines() {
    guard let current = parked, let next = nextDeadline else { return }
    if pipeline.tracker.isTracking || current.until.map({ next < $0 }) ?? true { unpark(.deadlines) }
  }
}
