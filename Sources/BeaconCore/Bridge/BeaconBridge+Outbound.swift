// The bridge's outbound queue: batches posted in order through the host, retried with backoff,
// dead-lettered when refused for good, and (postTrip) held until their trip ends. The queue is
// `OutboundLane`: in the journal when it is a `QueueJournal`, in memory otherwise.

extension BeaconBridge {
  /// Whether a trip's batches may be posted now: always in realtime mode; in postTrip mode once
  /// the trip has ended (a trip the resolver no longer knows has ended).
  func isDue(_ tripId: TripID) -> Bool {
    pipeline.configuration.trips.sending == .realtime || pipeline.resolver.trip(tripId)?.endedAt != nil
      || pipeline.resolver.trip(tripId) == nil
  }

  var queueJournal: (any QueueJournal)? { journal as? any QueueJournal }

  /// Queues tagged batches (the pipeline's `.post` steps), in order: due now, or waiting for
  /// their trip's end. With a `QueueJournal` they are already in it (`recordBatch`) and are only
  /// marked queued, in one write.
  func enqueue(_ batches: [TaggedTripBatch]) async {
    guard !batches.isEmpty else { return }
    let queue = queueJournal
    var due: [QueuedBatchKey] = []
    var waiting: [QueuedBatchKey] = []
    for batch in batches {
      let isDue = isDue(batch.tripId)
      outbound.enqueue(batch, due: isDue, keep: queue == nil)
      if queue != nil {
        let key = QueuedBatchKey(tripId: batch.tripId, sequence: batch.sequence)
        if isDue { due.append(key) } else { waiting.append(key) }
      }
    }
    if !due.isEmpty {
      await journaled("queueing \(due.count) batch(es)") { _ in try await queue?.recordQueued(due, due: true)
      }
    }
    if !waiting.isEmpty {
      await journaled("queueing \(waiting.count) batch(es) until their trip ends") { _ in
        try await queue?.recordQueued(waiting, due: false)
      }
    }
    windowExhausted = false
    wakePoster()
  }

  /// Makes the waiting batches of every trip that is now due (its end, a reload to realtime)
  /// due, after the batches due before them.
  func releaseWaiting(_ tripIds: [TripID]? = nil) async {
    var released = false
    for tripId in tripIds ?? outbound.waitingTrips where outbound.waiting(tripId) > 0 && isDue(tripId) {
      outbound.makeDue(tripId)
      await journaled("making trip \(tripId)'s batches due") { _ in try await queueJournal?.recordDue(tripId)
      }
      windowExhausted = false
      released = true
    }
    guard released else { return }
    if postsOnOwnTask { wakePoster() } else { await drainOutbound() }
  }

  /// The next due batch, tagged: from memory, or read from the journal a window at a time.
  func nextDue() async -> TaggedTripBatch? {
    guard outbound.dueCount > 0 else { return nil }
    guard let queue = queueJournal else { return outbound.nextInMemory }
    while true {
      if outbound.nextInWindow == nil {
        guard !windowExhausted else { return nil }
        let keys: [QueuedBatchKey]
        do { keys = try await queue.dueWindow(limit: Self.windowSize) } catch {
          log(.error, "journal: reading the queue failed: \(error)")
          return nil
        }
        outbound.refill(keys)
        // The counts say more is due than the journal has: nothing is posted until the next
        // batch is queued, rather than the journal read again and again.
        if keys.isEmpty {
          windowExhausted = true
          return nil
        }
      }
      guard let key = outbound.nextInWindow else { return nil }
      let batch: TripEventBatch?
      do { batch = try await queue.queuedBatch(key) } catch {
        log(.error, "journal: reading trip \(key.tripId) batch \(key.sequence) failed: \(error)")
        return nil
      }
      let resolution = pipeline.resolver.trip(key.tripId)?.resolution
      if let batch, let resolution, let deviceId = resolution.deviceId {
        return TaggedTripBatch(batch: batch, deviceId: deviceId, resolution: resolution)
      }
      // Gone from the journal, or of a trip that is no longer tagged: not postable, not counted.
      log(.error, "journal: trip \(key.tripId) batch \(key.sequence) is queued but cannot be posted; skipped")
      outbound.removeHead(key.tripId, inMemory: false)
    }
  }

  /// Keys read from the journal at a time.
  static var windowSize: Int { 64 }

  /// Posts due batches in order until none is due, a post fails (the backoff then waits), or the
  /// task is cancelled. One drain runs at a time; batches queued meanwhile are taken by the
  /// running drain, so order holds even though the actor is re-entered while the host posts. In
  /// postTrip mode a trip's batches wait outside the due queue until the trip ends; a trip's
  /// batches are all due or all waiting, so each trip's order holds.
  func drainOutbound() async {
    guard !isPosting else { return }
    isPosting = true
    defer { releasePostingLane() }
    let inMemory = queueJournal == nil
    while !Task.isCancelled, let batch = await nextDue() {
      if let retryAt, now < retryAt { return }
      do {
        try await host.postTripEventBatch(batch)
        outbound.removeHead(batch.tripId, inMemory: inMemory)
        recordDelivery()
        await journaled("delivery of \(batch.idempotencyKey)") {
          try await $0.recordDelivered(batch.tripId, sequence: batch.sequence)
        }
        emit(.batchPosted(batch))
        await retire(batch.tripId)
      } catch let refusal as PermanentPostFailure {
        // Retrying cannot help: keep it aside, durable, and go on with the next batch.
        outbound.removeHead(batch.tripId, inMemory: inMemory)
        upload.deadLettered += 1
        await journaled("dead letter \(batch.idempotencyKey)") {
          try await $0.recordDeadLetter(batch.tripId, sequence: batch.sequence, reason: refusal.reason)
        }
        emit(.batchDeadLettered(batch, reason: refusal.reason))
        log(
          .error,
          "the backend refused trip \(batch.tripId) batch \(batch.sequence) for good: \(refusal.reason)")
      } catch {
        // A post cut short by the stop is no failure: the batch stays queued for the next run.
        if Task.isCancelled { return }
        let configuration = pipeline.configuration
        retryDelay =
          retryDelay == 0 ? configuration.postRetryInitial : min(retryDelay * 2, configuration.postRetryMax)
        // Jitter spreads a fleet's retries after a backend outage; a server's Retry-After wins
        // when it asks for longer.
        var wait = retryDelay * (1 + Double.random(in: -1...1) * configuration.postRetryJitter)
        if let hint = (error as? RetryablePostFailure)?.retryAfter { wait = max(wait, hint) }
        retryAt = now + wait
        recordFailure(error)
        upload.retryAt = now + wait
        emit(.batchPostFailed(batch, error: String(describing: error), retryIn: wait))
        log(
          .warning,
          "posting trip \(batch.tripId) batch \(batch.sequence) failed: \(error); retrying in \(wait) s"
        )
        return
      }
    }
  }

  /// Posts one dead letter again (`trip retry`, `Store.retryDeadLetters`) in the outbound
  /// queue's lane: it waits for the post in flight, goes through the same host, and counts in the
  /// same upload state (`status`'s `upload`) as every other post. A delivery also ends the
  /// queue's backoff (the backend takes batches again). Throws what the host threw: the caller
  /// keeps the letter with the new reason.
  public func retryDeadLetter(_ batch: TaggedTripBatch) async throws {
    while isPosting { await withCheckedContinuation { postingWaiters.append($0) } }
    isPosting = true
    defer {
      releasePostingLane()
      // Batches queued while the lane was held were passed over by their drain.
      if postsOnOwnTask { wakePoster() } else { Task { await drainOutbound() } }
    }
    do {
      try await host.postTripEventBatch(batch)
    } catch {
      recordFailure(error)
      log(.warning, "retrying dead letter \(batch.idempotencyKey) failed: \(error)")
      throw error
    }
    recordDelivery()
    emit(.batchPosted(batch))
  }

  /// Frees the posting lane and wakes the next dead-letter retry waiting for it.
  func releasePostingLane() {
    isPosting = false
    if !postingWaiters.isEmpty {
      postingWaiters.removeFirst().resume()
    } else if isPosterIdle {
      resumeSettled()
    }
  }

  func retire(_ tripId: TripID) async {
    guard !pipeline.isRetired(tripId) else { return }
    pipeline.retireIfDone(tripId, outstanding: outbound.queued(tripId) > 0)
    if pipeline.isRetired(tripId) {
      await journaled("retiring trip \(tripId)") { try await $0.recordRetired(tripId) }
    }
  }

  /// A post went through: the backoff ends and `upload` counts the delivery.
  func recordDelivery() {
    retryAt = nil
    retryDelay = 0
    upload.delivered += 1
    upload.lastDeliveredAt = now
    upload.consecutiveFailures = 0
    upload.lastError = nil
    upload.retryAt = nil
  }

  /// A post failed: `upload` counts it with the host's own words.
  func recordFailure(_ error: any Error) {
    upload.consecutiveFailures += 1
    upload.lastError = String(describing: error)
    upload.lastFailedAt = now
  }

  // MARK: The posting task

  /// Posts on a task of its own from now on, until the task that runs `runPosting` is cancelled:
  /// no trip call and no deadline waits for a post. Returns that task.
  @discardableResult
  public func startPosting() -> Task<Void, Never> {
    postsOnOwnTask = true
    return Task { await self.runPosting() }
  }

  /// The posting loop (`startPosting`; the daemon runs it as a service): it drains the queue
  /// whenever a batch is due, sleeps out the backoff, and parks when nothing is due, woken by a
  /// batch queued or made due, or by the backoff's end. Returns when the task is cancelled; a
  /// post in flight is then the host's to cut short, and its batch stays queued.
  public func runPosting() async {
    postsOnOwnTask = true
    while !Task.isCancelled {
      if let retryAt, now < retryAt, outbound.dueCount > 0 {
        await parkPoster(until: retryAt)
      } else if isPosting || outbound.dueCount == 0 || windowExhausted {
        await parkPoster(until: nil)
      } else {
        await drainOutbound()
      }
    }
    resumeSettled()
  }

  /// Returns once the posting task is idle: no batch due, or the due ones waiting out a backoff,
  /// and no post in flight. For tests, and for tools that must see the queue still.
  public func settled() async {
    while !isPosterIdle { await withCheckedContinuation { settleWaiters.append($0) } }
  }

  var isPosterIdle: Bool {
    !isPosting && (outbound.dueCount == 0 || windowExhausted || retryAt.map { now < $0 } ?? false)
  }

  func parkPoster(until due: Timestamp?) async {
    resumeSettled()
    await park(.posting, until: due)
  }

  /// Wakes the parked posting loop.
  func wakePoster() { unpark(.posting) }

  func resumeSettled() {
    guard !settleWaiters.isEmpty else { return }
    let waiters = settleWaiters
    settleWaiters = []
    for waiter in waiters { waiter.resume() }
  }
}
