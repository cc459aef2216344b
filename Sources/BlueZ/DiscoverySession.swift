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
  /// Signal batches and monitor calls, merged so that one task handles both in order.
  private let inputs: AsyncStream<Input>
  private let inputContinuation: AsyncStream<Input>.Continuation
  private var forwarder: Task<Void, Never>?
  private var monitorApp: ExportedObject?
  /// The adapter our monitor is registered on (passive mode).
  private var monitorAdapter: ObjectPath?
  /// BlueZ's objects other than devices (adapters, the monitor manager).
  private var tree = ObjectTree()
  /// The devices, typed (see `DeviceRecord`), keyed by adapter and address.
  private var devices: [DeviceKey: DeviceRecord] = [:]
  /// When the mirror has shrunk enough to copy it into a smaller table.
  private var devicesShrink = PeakShrink()
  /// When the current input arrived: every sighting in a batch shares it.
  private var now = ContinuousClock.now
  private var adapter: ObjectPath? {
    didSet { adapterID = adapter.map(DeviceKey.adapter) }
  }
  /// `adapter` as `DeviceKey` names it.
  private var adapterID: UInt64?
  /// The adapter discovery last ran on, kept across a bluetoothd restart for reconciliation.
  private var lastAdapter: ObjectPath?
  private var discovering = false
  /// The adapter a StartDiscovery was sent to and not yet answered.
  private var discoveryRequested: ObjectPath?
  /// What `reportCondition` last told: `.some(nil)` for scanning, `.none` before the first report.
  private var reportedWaiting: String?? = .none
  private var bluezOwner: BusName?
  private(set) var failure: (any Error)?
  private var lastPrune = ContinuousClock.now

  enum Input: Sendable {
    case signals([SignalItem<DeviceUpdate>])
    case monitor(AdvertisementMonitor.Call, sender: BusName?)
  }

  init(
    connection: Connection, adapterName: String?, preferredMode: ScanMode,
    options: BlueZAdvertisementSource.Options, logger: @escaping @Sendable (String) -> Void,
    reportMode: @escaping @Sendable (ScanMode) -> Void
  ) {
    self.connection = connection
    self.adapterName = adapterName
    self.preferredMode = preferredMode
    self.options = options
    self.log = logger
    self.reportMode = reportMode
    (inputs, inputContinuation) = AsyncStream.makeStream(of: Input.self)
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
    let batches: AsyncStream<[SignalItem<DeviceUpdate>]>
    do {
      guard options.directSignalSocket else { throw DBusError(.notSupported, "turned off") }
      let stream = try SignalSocket(
        .address(connection.address), rules: Self.rules, batchInterval: options.batchInterval,
        setupTimeout: options.callTimeout, decode: DeviceUpdate.decode)
      self.stream = stream
      batches = stream.batches
    } catch {
      log("bluez: reading signals through libdbus (\(error))")
      let subscription = try await connection.subscribe(to: Self.rules, decoding: DeviceUpdate.decode)
      self.subscription = subscription
      batches = subscription.batches
    }
    let continuation = inputContinuation
    forwarder = Task {
      for await batch in batches { continuation.yield(.signals(batch)) }
      continuation.finish()
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
    (tree, devices) = try await managedObjects()
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
  func run(_ deliver: ([SourceEvent]) -> Void) async {
    guard subscription != nil || stream != nil else { return }
    var events: [SourceEvent] = []
    let emit: (SourceEvent) -> Void = { events.append($0) }
    for await input in inputs {
      defer {
        if !events.isEmpty { deliver(events) }
        events.removeAll(keepingCapacity: true)
      }
      now = .now
      await pruneIfDue()
      var resume = false
      switch input {
      case .signals(let batch):
        for item in batch {
          switch item {
          case .decoded(let update): handle(update, emit: emit)
          case .signal(let signal): handle(signal, emit: emit, resume: &resume)
          }
        }
        evictIfOver(emit: emit)
      case .monitor(let call, let sender):
        // Only bluetoothd may tell us what it found.
        guard sender != nil, sender == bluezOwner else {
          log("bluez: ignored a monitor call from \(sender?.rawValue ?? "nobody"), not org.bluez")
          continue
        }
        handle(call, emit: emit)
      }
      if resume { await resync(emit: emit) }
      if adapter == nil, bluezOwner != nil, let candidate = tree.selectAdapter(named: adapterName),
        tree[candidate, BlueZ.adapterInterface]?[BlueZ.Property.powered]?.bool == true
      {
        try? await startScanning(on: candidate)
      }
      reportCondition()
    }
    if !Task.isCancelled, connection.isClosed || stream != nil {
      failure = DBusError(.disconnected, "the D-Bus connection to \(connection.address) closed")
    }
  }

  /// What the scan waits for, derived from the mirror after every change, so that no path can
  /// leave a stale "scanning" behind (an adapter that vanished while discovery was restarting).
  /// Told to `Options.onWaiting` when it changes.
  private func reportCondition() {
    let waiting: String?
    if adapter != nil, discovering || monitorAdapter != nil {
      waiting = nil
    } else if bluezOwner == nil {
      // Debian starts bluetoothd only once an adapter appears (bluetooth.target): with none in
      // the kernel, the adapter is what is missing.
      waiting =
        KernelAdapters.names().isEmpty
        ? "waiting for an adapter (none on this machine; bluetoothd starts when one appears)"
        : "waiting for bluetoothd (it is not running)"
    } else if tree.adapters.isEmpty {
      waiting = "waiting for an adapter (BlueZ has none)"
    } else if let adapterName, !tree.adapters.contains(where: { $0.lastComponent == adapterName }) {
      waiting = "waiting for adapter \(adapterName)"
    } else if tree.selectAdapter(named: adapterName).map(isPowered) != true {
      waiting = "waiting for an adapter to be powered on"
    } else {
      waiting = "waiting for discovery to start again"
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
    inputContinuation.finish()
    if let monitorAdapter {
      do {
        _ = try await connection.call(
          destination: BlueZ.service, path: monitorAdapter, interface: AdvertisementMonitor.managerInterface,
          member: AdvertisementMonitor.unregister, [.objectPath(AdvertisementMonitor.root)],
          timeout: options.callTimeout)
      } catch {
        log("bluez: UnregisterMonitor on \(monitorAdapter.lastComponent) failed: \(error)")
      }
      self.monitorAdapter = nil
    }
    monitorApp?.unexport()
    monitorApp = nil
    // A StartDiscovery still awaiting its reply (the consumer stopped during `begin`) may have
    // started discovery all the same: stop it too.
    if let target = discovering ? adapter : discoveryRequested {
      do {
        _ = try await adapterCall(target, BlueZ.Method.stopDiscovery)
      } catch {
        log("bluez: StopDiscovery on \(target.lastComponent) failed: \(error)")
      }
      discovering = false
      discoveryRequested = nil
    }
    connection.close()
  }

  // MARK: Monitor calls (passive mode)

  private func handle(_ call: AdvertisementMonitor.Call, emit: (SourceEvent) -> Void) {
    switch call {
    case .activated:
      log("bluez: iBeacon advertisement monitor active")
    case .released:
      log("bluez: BlueZ released the advertisement monitor")
    case .deviceFound(let path):
      if let key = key(for: path), devices[key] != nil {
        devices[key]!.lastHeard = now
        emit(.sighting(devices[key]!.advertisement))
      }
    case .deviceLost(let path):
      if let address = key(for: path).flatMap({ devices[$0]?.address })
        ?? DeviceAdvertisement.address(path: path, properties: nil)
      {
        emit(.lost(address))
      }
    }
  }

  /// Passive scanning when asked for and the adapter offers `or_patterns`; active discovery
  /// otherwise (logged).
  private func startScanning(on path: ObjectPath) async throws {
    if preferredMode == .passiveMonitor {
      let types = tree[path, AdvertisementMonitor.managerInterface]?[AdvertisementMonitor.supportedTypes]?
        .strings
      if types?.contains("or_patterns") == true {
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

  /// The corresponding BlueZ method is AdvertisementMonitorManager1.RegisterMonitor.
  private func registerMonitor(on path: ObjectPath) async throws {
    if monitorApp == nil {
      let continuation = inputContinuation
      monitorApp = try connection.export(
        AdvertisementMonitor.root, subtree: true,
        handler: AdvertisementMonitor.handler { continuation.yield(.monitor($0, sender: $1)) })
    }
    _ = try await connection.call(
      destination: BlueZ.service, path: path, interface: AdvertisementMonitor.managerInterface,
      member: AdvertisementMonitor.register, [.objectPath(AdvertisementMonitor.root)],
      timeout: options.callTimeout)
    adapter = path
    lastAdapter = path
    monitorAdapter = path
    reportMode(.passiveMonitor)
    log("bluez: passive iBeacon monitor registered on \(path.lastComponent)")
  }

  // MARK: Signals

  private func handle(_ signal: Signal, emit: (SourceEvent) -> Void, resume: inout Bool) {
    switch (signal.interface, signal.member) {
    case (.bus, BlueZ.SignalName.nameOwnerChanged):
      guard signal.body.count == 3, let new = signal.body[2].string else { return }
      if new.isEmpty {
        log("bluez: org.bluez left the bus (bluetoothd stopped); waiting for it to return")
        bluezOwner = nil
        adapter = nil
        monitorAdapter = nil
        discovering = false
      } else {
        log("bluez: org.bluez is on the bus again as \(new); mirroring and restarting discovery")
        bluezOwner = BusName(new)
        resume = true
      }
    case (.objectManager, BlueZ.SignalName.interfacesAdded):
      guard signal.body.count == 2, let path = signal.body[0].objectPath else { return }
      let added = tree.interfacesAdded(at: path, signal.body[1])
      if added.contains(BlueZ.deviceInterface), let properties = tree.take(BlueZ.deviceInterface, at: path) {
        var mirrored = key(for: path)
        if let key = mirrored {
          devices[key]!.apply(properties, invalidated: [])
        } else if let record = DeviceRecord(path: path, properties: properties, at: now) {
          let key = DeviceKey(path: path, address: record.address)
          devices[key] = record
          mirrored = key
        }
        if let key = mirrored, let adapter, ObjectTree.device(path, isOf: adapter) {
          devices[key]!.lastHeard = now
          emit(.sighting(devices[key]!.advertisement))
        }
      }
      if added.contains(BlueZ.adapterInterface), adapter == nil {
        log("bluez: adapter \(path.lastComponent) appeared")
      }
    case (.objectManager, BlueZ.SignalName.interfacesRemoved):
      guard signal.body.count == 2, let path = signal.body[0].objectPath, let names = signal.body[1].strings
      else {
        return
      }
      let removed = tree.interfacesRemoved(at: path, names)
      if names.contains(BlueZ.deviceInterface.rawValue), let key = key(for: path),
        let device = devices.removeValue(forKey: key), let adapter, ObjectTree.device(path, isOf: adapter)
      {
        emit(.lost(device.address))
      }
      if removed[BlueZ.adapterInterface] != nil, path == adapter {
        log("bluez: adapter \(path.lastComponent) was removed; waiting for an adapter")
        // BlueZ may not remove the devices first (python-dbusmock's RemoveAdapter does not).
        let gone = devices.filter { ObjectTree.device($0.value.path, isOf: path) }
        for (key, record) in gone.sorted(by: { $0.value.path < $1.value.path }) {
          devices[key] = nil
          emit(.lost(record.address))
        }
        adapter = nil
        monitorAdapter = nil
        discovering = false
      }
    case (.properties, BlueZ.SignalName.propertiesChanged):
      guard signal.body.count >= 2, let interface = signal.body[0].string else { return }
      let invalidated = signal.body.count > 2 ? signal.body[2].strings ?? [] : []
      if interface == BlueZ.deviceInterface.rawValue {
        let changes = ObjectTree.properties(signal.body[1])
        deviceChanged(signal.path, emit: emit) { record in
          record.apply(changes, invalidated: invalidated)
          return !BlueZ.Property.advertisementKeys.isDisjoint(with: changes.keys)
        }
        let problems = DeviceAdvertisement.malformed(changes)
        if !problems.isEmpty {
          log("bluez: ignored \(problems.joined(separator: ", ")) from \(signal.path.lastComponent)")
        }
        return
      }
      let changes = tree.propertiesChanged(
        at: signal.path, interface: InterfaceName(interface), changed: signal.body[1],
        invalidated: invalidated)
      if interface == BlueZ.adapterInterface.rawValue, signal.path == adapter, discovering,
        changes[BlueZ.Property.discovering]?.bool == false,
        preferredMode == .activeDiscovery || monitorAdapter == nil
      {
        // Someone else (bluetoothctl, another client's StopDiscovery) ended discovery: start it
        // again. `run` re-selects the adapter after this batch.
        log("bluez: discovery on \(signal.path.lastComponent) was stopped by someone else; restarting it")
        adapter = nil
        discovering = false
      }
      if interface == BlueZ.adapterInterface.rawValue, let powered = changes[BlueZ.Property.powered]?.bool {
        if signal.path == adapter, !powered {
          log("bluez: adapter \(signal.path.lastComponent) was powered off; waiting for power")
          adapter = nil
          monitorAdapter = nil
          discovering = false
        }
        // Powered on: `run` selects it after this batch.
      }
    default:
      break
    }
  }

  /// A fast-decoded Device1 PropertiesChanged: RSSI, TxPower and ManufacturerData only.
  private func handle(_ update: DeviceUpdate, emit: (SourceEvent) -> Void) {
    deviceChanged(update.key, path: nil, emit: emit) { record in
      record.apply(update)
      return true
    }
  }

  /// The mirror's key for a device path: from the path itself, or (for a path that names no
  /// address) by looking for it.
  private func key(for path: ObjectPath) -> DeviceKey? {
    if let key = DeviceKey(path: path) { return devices[key] != nil ? key : nil }
    // Only a path that names no address (never one of BlueZ's) costs a search.
    return devices.first { $0.value.path == path }?.key
  }

  /// A generic Device1 PropertiesChanged.
  private func deviceChanged(
    _ path: ObjectPath, emit: (SourceEvent) -> Void, _ change: (inout DeviceRecord) -> Bool
  ) {
    let key: DeviceKey
    if let mirrored = self.key(for: path) {
      key = mirrored
    } else {
      guard let record = DeviceRecord(path: path, properties: [:], at: now) else { return }
      key = DeviceKey(path: path, address: record.address)
      devices[key] = record
    }
    deviceChanged(key, path: path, emit: emit, change)
  }

  /// Applies a change to a device (mirroring it if it is new) and reports a sighting when
  /// `change` says the advertisement changed and the device is on our adapter. One hash lookup.
  private func deviceChanged(
    _ key: DeviceKey, path: ObjectPath?, emit: (SourceEvent) -> Void, _ change: (inout DeviceRecord) -> Bool
  ) {
    var index = devices.index(forKey: key)
    if index == nil {
      guard let path = path ?? key.path, let record = DeviceRecord(path: path, properties: [:], at: now)
      else {
        return
      }
      devices[key] = record
      index = devices.index(forKey: key)
    }
    guard let index, change(&devices.values[index]), let adapterID, key.adapter == adapterID else { return }
    devices.values[index].lastHeard = now
    emit(.sighting(devices.values[index].advertisement))
  }

  /// Keeps the mirror under `maxDevices`: past it, the least recently heard tenth of the devices
  /// that are neither bonded nor kept is forgotten (reported lost; BlueZ drops them itself after
  /// its TemporaryTimeout, and a device heard again is mirrored again). Sorting a tenth at a time keeps a flood of
  /// random addresses at O(log n) per device. Once the mirror has shrunk to a quarter of its peak,
  /// it is copied into a smaller table (the daemon hands the freed pages back to the system).
  private func evictIfOver(emit: (SourceEvent) -> Void) {
    if devices.count > options.maxDevices {
      let candidates = devices.filter { !$0.value.bonded && !options.keep($0.value.address) }
        .sorted { $0.value.lastHeard < $1.value.lastHeard }
      let excess = devices.count - options.maxDevices + options.maxDevices / 10
      for (key, record) in candidates.prefix(excess) {
        devices[key] = nil
        emit(.lost(record.address))
      }
      log(
        "bluez: over \(options.maxDevices) devices mirrored; forgot the \(min(excess, candidates.count)) heard least recently"
      )
    }
    if devicesShrink.shouldRelease(tracked: devices.count) {
      devices = Dictionary(uniqueKeysWithValues: devices.map { ($0.key, $0.value) })
    }
  }

  /// After bluetoothd returns: mirror the new tree, report devices that vanished meanwhile as
  /// lost, and restart discovery. Retries for `resumeWindow`.
  private func resync(emit: (SourceEvent) -> Void) async {
    let before = devices
    let previousAdapter = adapter ?? lastAdapter
    adapter = nil
    monitorAdapter = nil
    discovering = false
    let deadline = ContinuousClock.now + options.resumeWindow
    while !Task.isCancelled {
      do {
        (tree, devices) = try await managedObjects()
        if let previousAdapter {
          for (key, record) in before.sorted(by: { $0.value.path < $1.value.path })
          where ObjectTree.device(record.path, isOf: previousAdapter) && devices[key] == nil {
            emit(.lost(record.address))
          }
        }
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

  /// BlueZ's objects: devices as records, the rest as a tree.
  private func managedObjects() async throws -> (ObjectTree, [DeviceKey: DeviceRecord]) {
    let reply = try await connection.callReturningOne(
      destination: BlueZ.service, path: BlueZ.objectManagerPath, interface: .objectManager,
      member: BlueZ.Method.getManagedObjects, timeout: options.callTimeout)
    var tree = ObjectTree(managedObjects: reply)
    var devices: [DeviceKey: DeviceRecord] = [:]
    let time = ContinuousClock.now
    for (path, properties) in tree.takeAll(BlueZ.deviceInterface) {
      guard let record = DeviceRecord(path: path, properties: properties, at: time) else { continue }
      devices[DeviceKey(path: path, address: record.address)] = record
    }
    return (tree, devices)
  }

  /// SetDiscoveryFilter({Transport: "le", DuplicateData: true}), then StartDiscovery (bleak's
  /// recipe). NotReady means the adapter is not powered yet, and a later Powered change retries.
  ///
  /// InProgress means one of two things. Either this connection already discovers on the
  /// adapter, or the kernel refused with Busy and bluetoothd dropped our request. The second
  /// happens after bluetoothd was killed while discovering: the kernel keeps that orphaned
  /// discovery running until its 10.24 s window ends, the new bluetoothd cannot start its own
  /// meanwhile, and no signal follows when the orphan ends (seen in the VM tier, BlueZ 5.66,
  /// Linux 6.1). The adapter's Discovering property tells them apart: false means nobody
  /// discovers for us, so we try again until `discoveryBusyWindow` has passed.
  private func startDiscovery(on path: ObjectPath) async throws {
    let filter = DBusValue.stringVariantDictionary(["Transport": "le", "DuplicateData": true])
    let deadline = ContinuousClock.now + Self.discoveryBusyWindow
    while true {
      do {
        _ = try await adapterCall(path, BlueZ.Method.setDiscoveryFilter, [filter])
        discoveryRequested = path
        _ = try await adapterCall(path, BlueZ.Method.startDiscovery)
      } catch let error as DBusError where error.name == .bluezInProgress {
        if try await adapterDiscovering(path) == false {
          guard ContinuousClock.now < deadline, !Task.isCancelled else { throw error }
          log("bluez: \(path.lastComponent) is busy (a discovery nobody owns?); trying again")
          try? await Task.sleep(for: .seconds(1))
          continue
        }
        log("bluez: discovery on \(path.lastComponent) already in progress")
      } catch let error as DBusError where error.name == .bluezNotReady {
        log("bluez: adapter \(path.lastComponent) is not ready (\(error.message)); waiting for power")
        return
      }
      break
    }
    adapter = path
    lastAdapter = path
    discovering = true
    discoveryRequested = nil
    reportMode(.activeDiscovery)
    log("bluez: discovery started on \(path.lastComponent) (le, duplicate data)")
  }

  /// At most this many RemoveDevice calls per prune, so that the scan never stalls behind them.
  static let removalsPerPrune = 256

  /// Longer than the kernel's LE discovery window (10.24 s), which bounds an orphaned discovery.
  static let discoveryBusyWindow: Duration = .seconds(15)

  /// The adapter's Discovering property, read now (the mirror may lag); nil if unreadable.
  private func adapterDiscovering(_ path: ObjectPath) async throws -> Bool? {
    let value = try? await connection.callReturningOne(
      destination: BlueZ.service, path: path, interface: .properties, member: "Get",
      [.string(BlueZ.adapterInterface.rawValue), .string(BlueZ.Property.discovering)],
      timeout: options.callTimeout)
    return value?.bool
  }

  /// Removes devices not heard for `staleDeviceAge` from BlueZ, except those BlueZ knows as
  /// paired, trusted or connected and those the consumer keeps. Their InterfacesRemoved then
  /// drops them from our mirror too.
  private func pruneIfDue() async {
    guard let adapter, lastPrune.duration(to: now) >= options.pruneInterval else { return }
    lastPrune = now
    let cutoff = now.advanced(by: .zero - options.staleDeviceAge)
    let stale = devices.filter { _, record in
      record.lastHeard < cutoff && !record.removalAsked && !record.bonded && !options.keep(record.address)
        && ObjectTree.device(record.path, isOf: adapter)
    }.sorted { $0.value.path < $1.value.path }.prefix(Self.removalsPerPrune)
    var removed = 0
    for (key, record) in stale {
      let path = record.path
      do {
        _ = try await adapterCall(adapter, BlueZ.Method.removeDevice, [.objectPath(path)])
        removed += 1
      } catch let error as DBusError where error.name == .bluezDoesNotExist {
        // Gone from BlueZ already.
      } catch {
        log("bluez: RemoveDevice \(path.lastComponent) failed: \(error)")
      }
      // Asked once: BlueZ's InterfacesRemoved (maybe still unread) reports it lost; if it is heard
      // again first, it may be pruned again later.
      devices[key]?.removalAsked = true
    }
    if removed > 0 {
      log(
        "bluez: removed \(removed) device(s) not heard for \(options.staleDeviceAge); \(devices.count) still mirrored"
      )
    }
  }

  private func adapterCall(_ path: ObjectPath, _ member: MemberName, _ arguments: [DBusValue] = [])
    async throws
    -> [DBusValue]
  {
    try await connection.call(
      destination: BlueZ.service, path: path, interface: BlueZ.adapterInterface, member: member, arguments,
      timeout: options.callTimeout)
  }
}
