import BeaconCore
import DBus

/// What the session does with each input: BlueZ's signals (the tree, the mirror and the adapter's
/// state follow them) and our monitor's calls. `run` calls these for every batch.
extension DiscoverySession {
  // MARK: Monitor calls (passive mode)

  func handle(_ call: AdvertisementMonitor.Call, emit: (consuming SourceEvent) -> Void) {
    switch call {
    case .activated:
      log("bluez: iBeacon advertisement monitor active")
    case .released:
      log("bluez: BlueZ released the advertisement monitor")
    case .deviceFound(let path):
      if let advertisement = mirror.found(path, at: now) { emit(.sighting(advertisement)) }
    case .deviceLost(let path):
      if let address = mirror.address(of: path) { emit(.lost(address)) }
    }
  }

  // MARK: Signals

  func handle(_ signal: Signal, emit: (consuming SourceEvent) -> Void, resume: inout Bool) {
    switch (signal.interface, signal.member) {
    case (.bus, BlueZ.SignalName.nameOwnerChanged):
      guard signal.body.count == 3, let new = signal.body[2].string else { return }
      if new.isEmpty {
        log("bluez: org.bluez left the bus (bluetoothd stopped); waiting for it to return")
        bluezOwner = nil
        state.stop()
      } else {
        log("bluez: org.bluez is on the bus again as \(new); mirroring and restarting discovery")
        bluezOwner = BusName(new)
        resume = true
      }
    case (.objectManager, BlueZ.SignalName.interfacesAdded):
      guard signal.body.count == 2, let path = signal.body[0].objectPath else { return }
      let added = tree.interfacesAdded(at: path, signal.body[1])
      if added.contains(BlueZ.deviceInterface), let properties = tree.take(BlueZ.deviceInterface, at: path),
        let advertisement = mirror.added(path, DeviceChanges(properties), at: now)
      {
        emit(.sighting(advertisement))
      }
      if added.contains(BlueZ.adapterInterface), state.adapter == nil {
        log("bluez: adapter \(path.lastComponent) appeared")
      }
    case (.objectManager, BlueZ.SignalName.interfacesRemoved):
      guard signal.body.count == 2, let path = signal.body[0].objectPath, let names = signal.body[1].strings
      else {
        return
      }
      let removed = tree.interfacesRemoved(at: path, names)
      if names.contains(BlueZ.deviceInterface.rawValue), let address = mirror.removed(path) {
        emit(.lost(address))
      }
      if removed[BlueZ.adapterInterface] != nil, path == state.adapter {
        log("bluez: adapter \(path.lastComponent) was removed; waiting for an adapter")
        for address in mirror.removeDevices(of: path) { emit(.lost(address)) }
        state.stop()
      }
    case (.properties, BlueZ.SignalName.propertiesChanged):
      guard signal.body.count >= 2, let interface = signal.body[0].string else { return }
      let invalidated = signal.body.count > 2 ? signal.body[2].strings ?? [] : []
      if interface == BlueZ.deviceInterface.rawValue {
        let changes = DeviceChanges(ObjectTree.properties(signal.body[1]))
        if let advertisement = mirror.changed(signal.path, changes, invalidated: invalidated, at: now) {
          emit(.sighting(advertisement))
        }
        let problems = changes.malformed
        if !problems.isEmpty {
          log("bluez: ignored \(problems.joined(separator: ", ")) from \(signal.path.lastComponent)")
        }
        return
      }
      let changes = tree.propertiesChanged(
        at: signal.path, interface: InterfaceName(interface), changed: signal.body[1],
        invalidated: invalidated)
      if interface == BlueZ.adapterInterface.rawValue, state == .discovering(signal.path),
        changes[BlueZ.Property.discovering]?.bool == false
      {
        // Someone else (bluetoothctl, another client's StopDiscovery) ended discovery: start it
        // again. `run` re-selects the adapter after this batch.
        log("bluez: discovery on \(signal.path.lastComponent) was stopped by someone else; restarting it")
        state.stop()
      }
      if interface == BlueZ.adapterInterface.rawValue, let powered = changes[BlueZ.Property.powered]?.bool {
        if signal.path == state.adapter, !powered {
          log("bluez: adapter \(signal.path.lastComponent) was powered off; waiting for power")
          state.stop()
        }
        // Powered on: `run` selects it after this batch.
      }
    default:
      break
    }
  }

  /// A fast-decoded Device1 PropertiesChanged: RSSI, TxPower and ManufacturerData only.
  func handle(_ update: DeviceUpdate, emit: (consuming SourceEvent) -> Void) {
    // `consume`: moved into the event, not copied and then destroyed (callgrind).
    if let advertisement = mirror.apply(update, at: now) { emit(.sighting(consume advertisement)) }
  }

  /// Keeps the mirror under `maxDevices` (`DeviceMirror.evict`), reporting the forgotten lost.
  ///
  /// A flood evicts every few passes: it is logged as it starts, then once as it ends (the mirror
  /// back under what an eviction leaves, with how many more went meanwhile), not once an
  /// eviction, which wrote a hundred lines in a few seconds and kept the daemon's recent lines
  /// scattered over the flood's heap.
  func evict(emit: (consuming SourceEvent) -> Void) {
    guard let forgotten = mirror.evict(over: options.maxDevices, keep: options.keep) else {
      if let more = forgottenSinceLogged, mirror.count < DeviceMirror.afterEviction(options.maxDevices) {
        if more > 0 {
          log(
            "bluez: forgot \(more) more devices heard least recently while over \(options.maxDevices) were mirrored"
          )
        }
        forgottenSinceLogged = nil
      }
      return
    }
    for address in forgotten { emit(.lost(address)) }
    if let more = forgottenSinceLogged {
      forgottenSinceLogged = more + forgotten.count
    } else {
      log(
        "bluez: over \(options.maxDevices) devices mirrored; forgot the \(forgotten.count) heard least recently"
      )
      forgottenSinceLogged = 0
    }
  }
}
