// The bridge's outbound queue: batches posted in order through the host, retried with backoff,
// dead-lettered when refused for good, and (postTrip) held until their trip ends.

extension BeaconBridge {
  /// Whether a trip's batches may be posted now: always in realtime mode; in postTrip mode once
  /// the trip has ended (a trip the resolver no longer knows has ended).
  func isDue(_ tripId: String) -> Bool {
    pipeline.configuration.trips.sending == .realtime || pipeline.resolver.trip(tripId)?.endedAt != nil
      || pipeline.resolver.trip(tripId) == nil
  }

  /// Posts queued batches in order. One drain runs at a time; batches queued meanwhile are taken
  /// by the running drain, so order holds even though the actor is re-entered while the host
  /// posts. In postTrip mode a trip's batches are passed over until the trip ends; a trip's
  /// batches are all due or all waiting, so each trip's order holds.
  func drainOutbound() async {
    guard !isPosting else { return }
    isPosting = true
    defer { releasePostingLane() }
    while let batch = outbound.first(where: { isDue($0.tripId) }) {
      if let retryAt, now < retryAt { return }
      func removeIt() {
        if let index = outbound.firstIndex(where: {
          $0.tripId == batch.tripId && $0.sequence == batch.sequence
        }) {
          outbound.remove(at: index)
        }
      }
      do {
        try await host.postTripEventBatch(batch)
        removeIt()
        recordDelivery()
        await journaled("delivery of \(batch.idempotencyKey)") {
          try await $0.recordDelivered(batch.tripId, sequence: batch.sequence)
        }
        emit(.batchPosted(batch))
        await retire(batch.tripId)
      } catch let refusal as PermanentPostFailure {
        // Retrying cannot help: keep it aside, durable, and go on with the next batch.
        removeIt()
        upload.deadLettered += 1
        await journaled("dead letter \(batch.idempotencyKey)") {
          try await $0.recordDeadLetter(batch.tripId, sequence: batch.sequence, reason: refusal.reason)
        }
        emit(.batchDeadLettered(batch, reason: refusal.reason))
        log(
          .error,
          "the backend refused trip \(batch.tripId) batch \(batch.sequence) for good: \(refusal.reason)")
      } catch {
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
      Task { await drainOutbound() }
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
    if !postingWaiters.isEmpty { postingWaiters.removeFirst().resume() }
  }

  func retire(_ tripId: String) async {
    guard !pipeline.isRetired(tripId) else { return }
    pipeline.retireIfDone(tripId, outstanding: outbound.contains { $0.tripId == tripId })
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
}
