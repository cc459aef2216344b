import BeaconCore
import DBus

/// One scan: the subscription, the mirrored tree, the chosen adapter. Runs inside one task.
final class DiscoverySession: @unchecked Sendable {
  // @unchecked: all mutable state is touched only by `begin()`, `run()` and `end()`, which the
  // source calls one after another from a single task.
  let connection: Connection
  let adapterName: String?
  let options: BlueZAdvertisementSource.Options
  let log: @Sendable (String) -> Void
  let preferredMode: ScanMode
  let reportMode: @Sendable (ScanMode) -> Void
  /// Signals come over a socket of their own (`SignalSocket`), or, where that cannot connect,
  /// through a libdbus subscription on `connection`.
  private var stream: SignalSocket<DeviceUpdate>?
  private var subscription: Subscription<SignalItem<DeviceUpdate>>?
  /// Signal batches and monitor calls, merged so that one task handles both in order
  /// (`SessionInbox`: no generic stream code per batch).
  private let inputs = SessionInbox<Input>()
  /// Moves the libdbus subscription's batches into `inputs` (the socket feeds it directly).
  private var forwarder: Task<Void, Never>?
  /// The fast Device1 decoder, with this scan's caches.
  private let decoder: DeviceDecoder
  /// Signals the reader dropped while this session held its batch past the read-ahead bound.
  private let dropped: EventCount
  private let monitor: Monitor
  // Internal rather than private: the handlers in DiscoverySession+Signals.swift change the
  // tree, the mirror, the state and the owner.
  /// BlueZ's objects other than devices (adapters, the monitor manager).
  var tree = ObjectTree()
  /// The devices (see `DeviceMirror`); its adapter follows `state`. Unchecked exclusivity, like
  /// `now`: only the session's task touches them, and the runtime check cost about 150
  /// instructions per advertisement.
  @exclusivity(unchecked) var mirror = DeviceMirror()
  /// When the current input arrived: every sighting in a batch shares it.
  @exclusivity(unchecked) var now = ContinuousClock.now
  /// The events of the input being handled, delivered after it. Only `handleInputs` touches it,
  /// in the session's isolation.
  @exclusivity(unchecked) private var events: [SourceEvent] = []
  /// Discovery or the monitor, and on which adapter.
  var state = ScanState.idle {
    didSet {
      mirror.adapter = state.adapter
      if let adapter = state.adapter { lastAdapter = adapter }
    }
  }
  /// The adapter discovery last ran on, kept across a bluetoothd restart for reconciliation.
  private var lastAdapter: ObjectPath?
  /// What `reportCondition` last told: `.some(nil)` for scanning, `.none` before the first report.
  private var reportedWaiting: ScanWait?? = .none
  var bluezOwner: BusName?
  private(set) var failure: (any Error)?
  private var lastPrune = ContinuousClock.now
  /// While the mirror is over `maxDevices`: the devices forgotten since the line that said so
  /// (`evict`); nil when it is not.
  var forgottenSinceLogged: Int?

  enum Input: Sendable {
    case signals([SignalItem<DeviceUpdate>])
    case monitor(AdvertisementMonitor.Call, sender: BusName?)
  }

  init(
    connection: Connection, adapterName: String?, preferredMode: ScanMode,
    options: BlueZAdvertisementSource.Options, counts: BlueZAdvertisementSource.Counts,
    logger: @escaping @Sendable (String) -> Void, reportMode: @escaping @Sendable (ScanMode) -> Void
  ) {
    decoder = DeviceDecoder(repeats: RepeatedUpdates(), overLimit: counts.manufacturerDataOverLimit)
    dropped = counts.droppedSignals
    self.connection = connection
    self.adapterName = adapterName
    self.preferredMode = preferredMode
    self.options = options
    self.log = logger
    self.reportMode = reportMode
    monitor = Monitor(connection: connection, callTimeout: options.callTimeout)
  }

  private func adapter(_ path: ObjectPath) -> Adapter {
    Adapter(connection: connection, path: path, callTimeout: options.callTimeout, log: log)
  }

  /// The signals BlueZ's tree changes by, plus bluetoothd's name coming and going.
  static let rules: [MatchRule] = [
    MatchRule(
      sender: BlueZ.service, interface: .objectManager, member: BlueZ.SignalName.interfacesAdded),
    MatchRule(
      sender: BlueZ.service, interface: .objectManager, member: BlueZ.SignalName.interfacesRemoved),
    MatchRule(
      sender: BlueZ.service, interface: .properties, member: BlueZ.SignalName.propertiesChanged,
      pathNamespace: BlueZ.root),
    MatchRule(
      sender: .bus, interface: .bus, member: BlueZ.SignalName.nameOwnerChanged, arg0: BlueZ.service.rawValue),
  ]

  /// Subscribes first, then mirrors, then starts discovery.
  func begin() async throws {
    let inputs = inputs
    do {
      guard options.directSignalSocket else { throw DBusError(.notSupported, "turned off") }
      // Batches go straight into `inputs` from the reader thread (no forwarding task per batch).
      stream = try SignalSocket(
        .address(connection.address), rules: Self.rules, batchInterval: options.batchInterval,
        setupTimeout: options.callTimeout, decode: decoder.decode,
        // No batch is handed on while the session still holds one (awaiting BlueZ while it
        // prunes, say): the reader reads ahead meanwhile, within its bound, and counts the rest.
        deliver: { inputs.yield(.signals($0)) }, ready: { inputs.isDrained }, finished: { inputs.finish() },
        dropped: dropped)
    } catch {
      log("bluez: reading signals through libdbus (\(error))")
      let subscription = try await connection.subscribe(to: Self.rules, decoding: decoder.decode)
      self.subscription = subscription
      forwarder = Task {
        for await batch in subscription.batches { inputs.yield(.signals(batch)) }
        inputs.finish()
      }
    }
    do {
      bluezOwner = try await connection.nameOwner(of: BlueZ.service)
    } catch let error as DBusError where error.name == .nameHasNoOwner {
      guard options.waitForHardware else {
        throw BlueZError(
          .bluezUnavailable, "org.bluez is not on \(connection.address): is bluetoothd running?")
      }
      // NameOwnerChanged brings it back (`resync`).
      log("bluez: org.bluez is not on the bus (bluetoothd is not running); waiting for it")
      reportCondition()
      return
    }
    try await mirrorBlueZ()
    guard !tree.adapters.isEmpty || options.waitForHardware else {
      throw BlueZError(.noAdapter, "BlueZ has no Bluetooth adapter")
    }
    guard let chosen = tree.selectAdapter(named: adapterName) else {
      if let adapterName, !options.waitForHardware {
        throw BlueZError(
          .adapterNotFound,
          "no adapter \(adapterName); BlueZ has \(tree.adapters.map(\.lastComponent).joined(separator: ", "))"
        )
      }
      // No (such) adapter, or none powered: `run` starts discovery when one appears or is
      // powered (InterfacesAdded, PropertiesChanged Powered).
      log("bluez: no usable adapter yet; waiting")
      reportCondition()
      return
    }
    try await startScanning(on: chosen)
    reportCondition()
  }

  /// Handles signal batches and monitor calls until the consumer cancels or the bus goes away.
  ///
  /// Runs in the consumer's isolation (`AdvertisementSource.run`): a batch from the reader thread
  /// resumes this loop as one job on the consumer's actor, and `deliver` runs in that job. The
  /// rare calls to BlueZ (prune, resync, starting discovery) leave the actor and come back; the
  /// checks for whether one is due do not.
  func run(isolation: isolated (any Actor)?, _ deliver: ([SourceEvent]) async -> Void) async {
    guard subscription != nil || stream != nil else { return }
    // Preferring the reader thread as executor runs the session (and a default actor it runs on)
    // on that thread, right after the read that resumed it: no other thread wakes per batch.
    await withTaskExecutorPreference(stream?.executor) { await handleInputs(isolation: isolation, deliver) }
    if !Task.isCancelled, connection.isClosed || stream != nil {
      failure = DBusError(.disconnected, "the D-Bus connection to \(connection.address) closed")
    }
  }

  private func handleInputs(isolation: isolated (any Actor)?, _ deliver: ([SourceEvent]) async -> Void) async
  {
    // `consuming`: an event is moved into the batch, not copied in and then destroyed (a retain
    // and a release of each of an advertisement's arrays, about 150 instructions, callgrind).
    // Into a property, not a captured local: a local var captured by a closure is checked for
    // exclusive access at run time on every append (about 80 instructions an advertisement).
    let emit: (consuming SourceEvent) -> Void = { self.events.append($0) }
    while let input = await inputs.next(isolation: isolation) {
      now = .now
      if pruneIsDue { await prune() }
      var resume = false
      switch input {
      case .signals(let batch):
        // Each item read in place: a `for item in batch` copies every update out of the array
        // and destroys the copy (a retain and a release of its manufacturer data).
        batch.withUnsafeBufferPointer { items in
          for index in items.indices {
            switch items[index] {
            case .decoded(let update): handle(update, emit: emit)
            case .signal(let signal): handle(signal, emit: emit, resume: &resume)
            }
          }
        }
        evict(emit: emit)
      case .monitor(let call, let sender):
        // Only bluetoothd may tell us what it found.
        if sender != nil, sender == bluezOwner {
          handle(call, emit: emit)
        } else {
          log("bluez: ignored a monitor call from \(sender?.rawValue ?? "nobody"), not org.bluez")
        }
      }
      if resume { await resync(emit: emit) }
      if state.adapter == nil, bluezOwner != nil, let candidate = tree.selectAdapter(named: adapterName),
        tree[candidate, BlueZ.adapterInterface]?[BlueZ.Property.powered]?.bool == true
      {
        try? await startScanning(on: candidate)
      }
      reportCondition()
      if !events.isEmpty {
        await deliver(events)
        // A pass's capacity is kept for the next, up to a burst's (a flood of new devices),
        // which would otherwise stay for good.
        events.removeAll(keepingCapacity: events.capacity <= 1024)
      }
    }
  }

  /// What the scan waits for, derived from the mirror after every change, so that no path can
  /// leave a stale "scanning" behind (an adapter that vanished while discovery was restarting).
  /// Told to `Options.onWaiting` when it changes.
  private func reportCondition() {
    let waiting: ScanWait?
    if state.adapter != nil {
      waiting = nil
    } else if bluezOwner == nil {
      // Debian starts bluetoothd only once an adapter appears (bluetooth.target): with none in
      // the kernel, the adapter is what is missing.
      waiting = ScanWait(KernelAdapters.names().isEmpty ? .noAdapter : .bluetoothdAbsent)
    } else if tree.adapters.isEmpty {
      waiting = ScanWait(.noBlueZAdapter)
    } else if let adapterName, !tree.adapters.contains(where: { $0.lastComponent == adapterName }) {
      waiting = ScanWait(.adapterMissing, adapter: adapterName)
    } else if tree.selectAdapter(named: adapterName).map(isPowered) != true {
      waiting = ScanWait(.adapterOff)
    } else {
      waiting = ScanWait(.discoveryRestarting)
    }
    guard waiting != reportedWaiting else { return }
    reportedWaiting = waiting
    options.onWaiting(waiting)
  }

  private func isPowered(_ path: ObjectPath) -> Bool {
    tree[path, BlueZ.adapterInterface]?[BlueZ.Property.powered]?.bool == true
  }

  /// Removes the match rules, then stops discovery (bleak's order), then closes the connection.
  func end() async {
    await subscription?.cancel()
    subscription = nil
    stream?.cancel()
    stream = nil
    forwarder?.cancel()
    inputs.finish()
    if let adapter = state.monitorAdapter {
      do {
        try await monitor.unregister(from: adapter)
      } catch {
        log("bluez: UnregisterMonitor on \(adapter.lastComponent) failed: \(error)")
      }
    }
    monitor.unexport()
    // A StartDiscovery still awaiting its reply (the consumer stopped during `begin`) may have
    // started discovery all the same: stop it too.
    if let target = state.discoveryToStop {
      do {
        try await adapter(target).stopDiscovery()
      } catch {
        log("bluez: StopDiscovery on \(target.lastComponent) failed: \(error)")
      }
    }
    state = .idle
    connection.close()
  }

  /// Passive scanning when asked for and the adapter offers `or_patterns`; active discovery
  /// otherwise (logged).
  private func startScanning(on path: ObjectPath) async throws {
    if preferredMode == .passiveMonitor {
      if Monitor.offersPatterns(tree, on: path) {
        do {
          try await registerMonitor(on: path)
          return
        } catch {
          log("bluez: RegisterMonitor on \(path.lastComponent) failed (\(error)); using active discovery")
        }
      } else {
        log(
          "bluez: \(path.lastComponent) offers no or_patterns advertisement monitor; using active discovery")
      }
    }
    try await startDiscovery(on: path)
  }

  /// AdvertisementMonitorManager1.RegisterMonitor, through `Monitor`.
  private func registerMonitor(on path: ObjectPath) async throws {
    let inputs = inputs
    try await monitor.register(on: path) { inputs.yield(.monitor($0, sender: $1)) }
    state = .monitoring(path)
    reportMode(.passiveMonitor)
    log("bluez: passive iBeacon monitor registered on \(path.lastComponent)")
  }

  /// After bluetoothd returns: mirror the new tree, report devices that vanished meanwhile as
  /// lost, and restart discovery. Retries for `resumeWindow`.
  private func resync(emit: (consuming SourceEvent) -> Void) async {
    let previousAdapter = state.adapter ?? lastAdapter
    state.stop()
    let before = mirror
    let deadline = ContinuousClock.now + options.resumeWindow
    while !Task.isCancelled {
      do {
        // Each try compares with the mirror as it was before the restart.
        mirror = before
        for address in try await mirrorBlueZ(lostOf: previousAdapter) { emit(.lost(address)) }
        guard let chosen = tree.selectAdapter(named: adapterName) else {
          log("bluez: no usable adapter after the restart; waiting for one")
          return
        }
        try await startScanning(on: chosen)
        return
      } catch {
        if ContinuousClock.now >= deadline {
          log("bluez: could not resume discovery: \(error); waiting for the next change")
          return
        }
        try? await Task.sleep(for: .milliseconds(200))
      }
    }
  }

  // MARK: Calls

  /// GetManagedObjects: devices into the mirror, the rest into the tree. Returns the addresses of
  /// `adapter`'s devices that the mirror had and BlueZ no longer has, sorted by path.
  @discardableResult
  private func mirrorBlueZ(lostOf adapter: ObjectPath? = nil) async throws -> [BluetoothAddress] {
    // Read in place, one object at a time, on the reader thread while the reply is there: no
    // `DBusValue` tree of a thousand devices is built and freed around the mirror's records.
    let seed = try await connection.call(
      destination: BlueZ.service, path: BlueZ.objectManagerPath, interface: .objectManager,
      member: BlueZ.Method.getManagedObjects, timeout: options.callTimeout
    ) { reply throws(DBusError) in try ManagedObjects(reply, at: .now) }
    let lost = mirror.reseed(with: seed.devices, lostOf: adapter)
    tree = seed.tree
    return lost
  }

  /// SetDiscoveryFilter and StartDiscovery through `Adapter` (NotReady: a later Powered change
  /// retries).
  private func startDiscovery(on path: ObjectPath) async throws {
    guard try await adapter(path).startDiscovery(requested: { state = .requested(path) }) == .started else {
      return
    }
    state = .discovering(path)
    reportMode(.activeDiscovery)
    log("bluez: discovery started on \(path.lastComponent) (le, duplicate data)")
  }

  /// At most this many RemoveDevice calls per prune, so that the scan never stalls behind them.
  static let removalsPerPrune = 256

  /// Whether `prune` has work: checked for every batch without leaving the consumer's actor.
  private var pruneIsDue: Bool {
    state.adapter != nil && lastPrune.duration(to: now) >= options.pruneInterval
  }

  /// Removes devices not heard for `staleDeviceAge` from BlueZ, except those BlueZ knows as
  /// paired, trusted or connected and those the consumer keeps (`DeviceMirror.stale`). Their
  /// InterfacesRemoved then drops them from our mirror too.
  private func prune() async {
    guard let path = state.adapter else { return }
    lastPrune = now
    let adapter = adapter(path)
    let stale = mirror.stale(
      of: path, heardBefore: now.advanced(by: .zero - options.staleDeviceAge), keep: options.keep,
      limit: Self.removalsPerPrune)
    var removed = 0
    for (key, device) in stale {
      do {
        if try await adapter.removeDevice(device) { removed += 1 }
      } catch {
        log("bluez: RemoveDevice \(device.lastComponent) failed: \(error)")
      }
      // Asked once: BlueZ's InterfacesRemoved (maybe still unread) reports it lost; if it is heard
      // again first, it may be pruned again later.
      mirror.removalAsked(key)
    }
    if removed > 0 {
      log(
        "bluez: removed \(removed) device(s) not heard for \(options.staleDeviceAge); \(mirror.count) still mirrored"
      )
    }
  }
}
