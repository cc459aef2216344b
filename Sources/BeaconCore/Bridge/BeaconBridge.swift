/// The façade an app drives: the counterpart of the Scope SDKs' `ScopeSDK`.
///
/// It runs a `BeaconPipeline` against a clock and a `ScopeHost`:
/// - advertisements from an `AdvertisementSource` feed presence and the active beacon;
/// - at trip start it calls the host's beacon hook, which snapshots the active beacon;
/// - every trip batch is tagged and handed to `host.postTripEventBatch`, in order, retried with
///   backoff when the host throws, and never dropped.
///
/// Like `ScopeSDK.start` followed by `authenticated()`, the bridge records trips only once it is
/// armed: `start()` checks the configuration (the daemon also opens its store first). Until then
/// trip calls throw `BridgeError.notArmed`.
public actor BeaconBridge {
  public nonisolated let host: any ScopeHost
  let clock: BridgeClock
  let observer: (@Sendable (TimedBridgeEvent) -> Void)?
  let journal: (any TripJournal)?
  /// Unchecked exclusivity: only the actor touches it, through synchronous calls that hold no
  /// closure back into the bridge, so accesses never overlap; the run-time check cost about 80
  /// instructions per advertisement (callgrind).
  @exclusivity(unchecked) var pipeline: BeaconPipeline
  private(set) public var isArmed = false
  private var restored = false

  /// The outbound queue (BeaconBridge+Outbound.swift): with a `QueueJournal`, counts and a
  /// window of keys; the batches stay in the journal.
  var outbound = OutboundLane()
  /// The journal had fewer due batches than the lane counted: nothing to post until more come.
  var windowExhausted = false
  /// Whether posts run on the posting task (`startPosting`, `runPosting`); otherwise the call
  /// or tick that queued a batch drains the queue itself.
  var postsOnOwnTask = false
  /// The parked posting loop (`park(_:until:)`), and `settled` callers waiting for it to be idle.
  var poster: ParkedLoop?
  var settleWaiters: [CheckedContinuation<Void, Never>] = []
  var isPosting = false
  /// Dead-letter retries waiting for the posting lane (`retryDeadLetter`).
  var postingWaiters: [CheckedContinuation<Void, Never>] = []
  var retryAt: Timestamp?
  var retryDelay: Double = 0
  /// How posting has gone since the bridge started (`status`'s `upload`, doctor's check).
  var upload = UploadState()

  /// - Parameters:
  ///   - host: the integrator's host.
  ///   - clock: where time comes from; tests pass a `VirtualClock`.
  ///   - journal: where trips and batches are kept durably; nil keeps them in memory only.
  ///   - observer: called for every event, in order, on the bridge's executor.
  public init<C: Clock>(
    host: any ScopeHost, clock: C, journal: (any TripJournal)? = nil,
    observer: (@Sendable (TimedBridgeEvent) -> Void)? = nil
  ) where C.Duration == Duration {
    self.host = host
    self.clock = BridgeClock(clock)
    self.journal = journal
    self.observer = observer
    self.pipeline = BeaconPipeline(configuration: host.configuration)
  }

  public init(
    host: any ScopeHost, journal: (any TripJournal)? = nil,
    observer: (@Sendable (TimedBridgeEvent) -> Void)? = nil
  ) {
    self.init(host: host, clock: ContinuousClock(), journal: journal, observer: observer)
  }

  public var now: Timestamp { clock.now() }

  // MARK: Lifecycle

  /// Arms the bridge: checks the host's configuration. Throws `invalidConfiguration` listing
  /// every problem.
  public func start() async throws(BridgeError) {
    let configuration = host.configuration
    let problems = configuration.problems()
    guard problems.isEmpty else {
      throw BridgeError(.invalidConfiguration, "invalid configuration: " + problems.joined(separator: "; "))
    }
    pipeline.reconfigure(configuration)
    if let journal, !restored {
      let kept: [JournaledTrip]
      do { kept = try await journal.load() } catch {
        throw BridgeError(.journal, "cannot read the trip journal: \(error)")
      }
      restored = true
      for notice in await journal.loadNotices() { log(.warning, notice) }
      let batches = kept.reduce(0) { $0 + $1.batches.count + $1.queued }
      if !kept.isEmpty { log(.notice, "restored \(kept.count) trip(s) and \(batches) undelivered batch(es)") }
      isArmed = true
      // Queued batches stay in the journal: only their counts come back.
      for trip in kept where trip.queued > 0 {
        outbound.restore(trip.tripId, queued: trip.queued, waiting: trip.waiting)
      }
      let steps = pipeline.restore(kept, at: now)
      await perform(steps)
      // A trip that ended, or a sending mode changed to realtime, while the daemon was down.
      await releaseWaiting()
      // What the journal kept queued is due now: the posting task parked before it was counted.
      if outbound.dueCount > 0 { if postsOnOwnTask { wakePoster() } else { await drainOutbound() } }
      // Trips the restore ended (over `maxOpenTrips`): retired once nothing of them is left.
      var ended = 0
      for case .event(.tripEnded(let tripId, _)) in steps {
        ended += 1
        await retire(tripId)
      }
      if ended > 0 {
        let most = pipeline.configuration.trips.maxOpenTrips
        log(.warning, "ended the \(ended) oldest open trip(s): more than maxOpenTrips (\(most)) were open")
      }
    }
    isArmed = true
    log(.info, "armed")
  }

  /// Re-reads the host's configuration (SIGHUP). An invalid one is refused and the old one kept.
  public func reload() async throws(BridgeError) {
    let configuration = host.configuration
    let problems = configuration.problems()
    guard problems.isEmpty else {
      throw BridgeError(.invalidConfiguration, "invalid configuration: " + problems.joined(separator: "; "))
    }
    await perform(pipeline.reconfigure(configuration, at: now))
    // postTrip batches become due when a reload makes the sending realtime.
    await releaseWaiting()
    wakeDeadlines()
    log(.info, "configuration reloaded")
  }

  public func setPairings(_ pairings: [Pairing]) async {
    await perform(pipeline.setPairings(PairingSet(pairings), at: now))
  }

  // MARK: Radio

  /// Feeds one event from an advertisement source.
  public func ingest(_ event: SourceEvent) async {
    await perform(pipeline.ingest(event, at: now))
    wakeDeadlines()
  }

  /// One array of a source's events, on the actor: an advertisement costs neither an actor hop
  /// nor a hand-over of its own.
  private func ingest(batch: [SourceEvent]) async {
    // The events of a batch arrived together and share its time (as the BlueZ session stamps
    // them): the clock is read again only after `perform`, which may suspend.
    var time = now
    var index = 0
    while index < batch.count {
      // In place, up to the next event with steps: a `for event in batch` copies every event out
      // of the array and destroys the copy (a retain and a release per array it holds), and so
      // does passing `events[index]` to `pipeline.ingest` (`ingest(_:from:at:)` says why).
      let steps = batch.withUnsafeBufferPointer { events in pipeline.ingest(events, from: &index, at: time) }
      if !steps.isEmpty {
        await perform(steps)
        time = now
      }
    }
    wakeDeadlines()
  }

  /// Handles every deadline due now. `run(source:)` calls it on its own; virtual-time drivers
  /// call it after moving the clock.
  public func tick() async {
    let time = now
    await perform(pipeline.tick(at: time))
    // Without a posting task, a batch's retry is one of the deadlines.
    if !postsOnOwnTask, let retryAt, retryAt <= time { await drainOutbound() }
  }

  /// The earliest time `tick` has work.
  public var nextDeadline: Timestamp? {
    let retry = postsOnOwnTask || outbound.dueCount == 0 ? nil : retryAt
    return [pipeline.nextDeadline, retry].compactMap { $0 }.min()
  }

  /// Consumes a source until it ends or the task is cancelled, ticking deadlines meanwhile.
  public func run(source: some AdvertisementSource) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
      group.addTask { try await self.consume(source: source) }
      group.addTask { try await self.runDeadlines() }
      // The source ending ends the run.
      try await group.next()
      group.cancelAll()
    }
  }

  /// Consumes a source until it ends, fails or the task is cancelled. Deadlines are not ticked
  /// here: the daemon runs `runDeadlines()` on its own, so that trips keep their deadlines while
  /// no source runs (no adapter, bluetoothd stopped).
  ///
  /// The source runs on the actor (`AdvertisementSource.run`): each array it reads is ingested in
  /// the job that resumed it, with no stream or task between. `started` is called once the source
  /// runs.
  public func consume(source: some AdvertisementSource, started: @Sendable () -> Void = {}) async throws {
    try await source.run(isolation: self) {
      log(.info, "scanning with \(source.description)")
      started()
    } deliver: { batch in
      await ingest(batch: batch)
    }
  }

  /// The parked deadline loop: resumed by its timer, by `wakeDeadlines`, or by cancellation.
  var parked: ParkedLoop?
  /// Numbers each parking, so that a timer wakes only the parking it was set for.
  var parkCount: UInt64 = 0

  // MARK: Trips

  /// Starts a trip and calls the host's beacon hook, which snapshots the active beacon.
  public func tripStart(_ tripId: TripID) async throws(BridgeError) {
    try requireArmed()
    let steps: [BeaconPipeline.Step]
    do { steps = try pipeline.startTrip(tripId, at: now) } catch {
      throw BridgeError(.trip, error.description)
    }
    if let journal {
      do { try await journal.recordTripStarted(tripId) } catch {
        pipeline.cancelTrip(tripId)
        throw BridgeError(.refused, "trip \(tripId) not started: \(error)")
      }
    }
    await perform(steps)
    await host.onBeaconTripStart(BeaconTripStart(tripId: tripId, bridge: self))
    await perform(pipeline.hookFinished(for: tripId, at: now))
  }

  func snapshotActiveBeacon(for tripId: TripID) async -> BeaconSnapshot? {
    let (snapshot, steps) = pipeline.snapshotActiveBeacon(for: tripId, at: now)
    await perform(steps)
    if snapshot == nil {
      log(
        .info,
        "trip \(tripId): no active beacon yet; waiting up to \(pipeline.configuration.trips.lateWindow) s")
    }
    return snapshot
  }

  /// Hands over one batch of trip events. It is tagged and posted when the trip has its device ID,
  /// and held in order until then.
  public func tripEvents(_ tripId: TripID, events: [TripEvent]) async throws(BridgeError) {
    try requireArmed()
    let batch: TripEventBatch
    do { batch = try pipeline.numberBatch(tripId, events: events, at: now) } catch {
      throw BridgeError(.trip, error.description)
    }
    // Durable before this call returns; a batch the journal refuses is not taken at all.
    if let journal {
      do { try await journal.recordBatch(batch) } catch {
        throw BridgeError(.refused, "batch not accepted: \(error)")
      }
    }
    let steps: [BeaconPipeline.Step]
    do { steps = try pipeline.tripEvents(batch) } catch { throw BridgeError(.trip, error.description) }
    await perform(steps)
  }

  public func tripEnd(_ tripId: TripID) async throws(BridgeError) {
    try requireArmed()
    let steps: [BeaconPipeline.Step]
    do { steps = try pipeline.endTrip(tripId, at: now) } catch { throw BridgeError(.trip, error.description) }
    // In postTrip mode, the trip's batches become due now (`perform`, on `tripEnded`).
    await perform(steps)
    await retire(tripId)
  }

  /// Tags a held, unresolved trip with a device ID by hand.
  public func assign(_ tripId: TripID, deviceId: DeviceID) async throws(BridgeError) {
    try requireArmed()
    let steps: [BeaconPipeline.Step]
    do { steps = try pipeline.assign(tripId, deviceId: deviceId, at: now) } catch {
      throw BridgeError(.trip, error.description)
    }
    await perform(steps)
    await retire(tripId)
  }

  // MARK: State

  public var status: BridgeStatus {
    BridgeStatus(
      armed: isArmed, beaconsInRange: pipeline.tracker.inRange, active: pipeline.selector.active,
      trips: pipeline.resolver.allTrips.map { trip in
        BridgeStatus.Trip(
          tripId: trip.tripId, startedAt: trip.startedAt, endedAt: trip.endedAt, resolution: trip.resolution,
          heldBatches: pipeline.tagger.heldBatches(trip.tripId).count,
          waitingForEnd: outbound.waiting(trip.tripId))
      },
      outboundBatches: outbound.total, pairings: pipeline.pairings.pairings, now: now,
      health: pipeline.health.health, pairedBeacons: pipeline.pairedBeacons,
      ignoredFrames: pipeline.health.ignoredFrames, upload: upload,
      eidReplaysRefused: pipeline.eidReplaysRefused, rpaReplaysRefused: pipeline.rpaReplaysRefused)
  }

  // MARK: Internals

  func requireArmed() throws(BridgeError) {
    guard isArmed else {
      throw BridgeError(.notArmed, "the bridge is not armed: call start() once the configuration is valid")
    }
  }

  /// Records and emits the pipeline's events and queues its posts. Posting is the posting
  /// task's (`startPosting`); without one, the queue is drained here.
  func perform(_ steps: [BeaconPipeline.Step]) async {
    var posts: [TaggedTripBatch] = []
    var ended: [TripID] = []
    for step in steps {
      switch step {
      case .event(let event):
        await record(event)
        emit(event)
        if case .tripEnded(let tripId, _) = event { ended.append(tripId) }
      case .post(let batch):
        posts.append(batch)
      }
    }
    await enqueue(posts)
    if !ended.isEmpty { await releaseWaiting(ended) }
    if !postsOnOwnTask, !posts.isEmpty || !ended.isEmpty { await drainOutbound() }
    wakeDeadlines()
  }

  /// Keeps the journal in step with what just happened.
  func record(_ event: BridgeEvent) async {
    switch event {
    case .tripTagged(let tripId, let resolution):
      let beaconMode = pipeline.resolver.trip(tripId)?.beaconMode ?? false
      await journaled("resolution of trip \(tripId)") {
        try await $0.recordResolution(tripId, resolution, beaconMode: beaconMode)
      }
    case .tripEnded(let tripId, _):
      await journaled("end of trip \(tripId)") { try await $0.recordTripEnded(tripId) }
    default:
      break
    }
  }

  /// A journal write after the fact: a failure is logged, not thrown. The worst it costs is a
  /// batch delivered twice after a restart, which the idempotency key de-duplicates.
  func journaled(_ what: String, _ body: (any TripJournal) async throws -> Void) async {
    guard let journal else { return }
    do { try await body(journal) } catch { log(.error, "journal: recording \(what) failed: \(error)") }
  }

  func emit(_ event: BridgeEvent) {
    observer?(TimedBridgeEvent(at: now, event: event))
  }

  func log(_ level: LogRecord.Level, _ message: String) {
    host.log(LogRecord(level: level, message: message, at: now))
  }
}
