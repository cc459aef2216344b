import BeaconCore

/// SIGHUP (`ServiceGroup.reload`): the configuration file read again and applied, or refused
/// whole with the old one kept, between RELOADING=1 and READY=1.
struct DaemonReload: Sendable {
  let daemon: Daemon
  let notifier: SystemdNotifier
  let logger: DaemonLogger
  let settings: DaemonSettings
  let uploads: UploadSinks
  let store: Store
  let bridge: BeaconBridge
  let host: DaemonHost
  let book: PairingBook
  /// The fleet link as the daemon started it, which a reload does not restart.
  let fleetLink: FleetLinkIdentity

  func run() async {
    notifier.notify("RELOADING=1")
    do {
      let fresh = try daemon.loadConfiguration()
      logger.learnSecrets(of: fresh)
      // The fleet's settings lie over the new file as over the old: a file they no longer
      // fit (exitTimeoutMax below the fleet's exitTimeout) is refused before anything uses it.
      let problems = DaemonSettings.bridge(file: fresh, remote: settings.remote).problems()
      guard problems.isEmpty else {
        throw BridgeError(
          .invalidConfiguration,
          "invalid configuration with the fleet's settings over it: " + problems.joined(separator: "; "))
      }
      // The new tolerance with the store's EID pairings: a cold search past the limit is
      // refused before anything uses it; else the new file is taken in the same call on the
      // store, so a PairWithKey meanwhile is checked against one tolerance or the other.
      let tolerance = DaemonSettings.bridge(file: fresh, remote: settings.remote).eidClockTolerance
      if let refusal = try await store.coldSearchRefusal(
        eidClockTolerance: tolerance, apply: { settings.update(fresh) })
      {
        throw BridgeError(.invalidConfiguration, refusal)
      }
      // A changed [Upload] or [MQTT] gets its new sink now, and the old one (its broker
      // connection) stops here, not at the next post.
      _ = uploads.sink(for: fresh)
      await store.setOutboxLimit(fresh.outboxMaxBatches)
      try await bridge.reload()
      // The keys' resolver takes the new [ActiveBeacon] eidClockTolerance; the beacons'
      // clocks and heard windows carry over.
      try await book.refresh()
      if FleetLinkIdentity(fresh) != fleetLink {
        logger.log(
          .warning,
          "[Fleet] or its broker changed in \(daemon.configPath); the fleet link keeps the ones it started with until the daemon restarts (systemctl restart beaconbridge)"
        )
      }
      logger.log(.notice, "configuration reloaded from \(daemon.configPath)")
    } catch {
      logger.log(.error, "configuration not reloaded, the old one stays: \(error)")
    }
    notifier.notify("READY=1")
  }
}

/// What a running fleet link was started with: `[Fleet]` but the line it was read from, and the
/// broker it speaks to (`[Fleet] URL` or the `[Upload]` broker, its TLS files and credentials).
struct FleetLinkIdentity: Hashable, Sendable {
  let options: FleetOptions?
  let broker: MQTTSettings?

  init(_ configuration: DaemonConfiguration) {
    var options = configuration.fleet
    options.line = 0
    self.options = options.enabled ? options : nil
    broker = configuration.fleetSettings
  }
}
