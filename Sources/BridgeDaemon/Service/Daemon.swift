import BeaconCore
import BlueZ
import DBus
import FoundationEssentials
import GZone
import HCI
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// `beaconbridge run`: configuration, store, scanning, the bridge, and the systemd protocol.
///
/// Start-up order: read the configuration (refuse to start on any problem, at `file:line`), open
/// the store, arm the bridge (which restores the outbox), own the bus name, then `READY=1`; then
/// scan, waiting for an adapter or bluetoothd if there is none yet (`ScanService`).
/// SIGTERM stops gracefully with status 0; SIGHUP re-reads the configuration and keeps the old
/// one if the new one is bad. The daemon owns its state directory (`StateLock`): `beaconbridge
/// pair` goes through its D-Bus API; a pairing another tool writes into the store is picked up
/// within two seconds (SQLite's `data_version`, checked when the state directory changes).
public struct Daemon: Sendable {
  /// The program's version (`beaconbridge --version`, the fleet's birth message).
  public static let version = "0.1.0"

  public var configPath: String
  public var configPathIsExplicit: Bool
  public var stateDirectory: String
  public var environment: [String: String]

  public init(configPath: String?, stateDirectory: String, environment: [String: String]) {
    self.configPath = configPath ?? DaemonConfiguration.defaultPath
    self.configPathIsExplicit = configPath != nil
    self.stateDirectory = stateDirectory
    self.environment = environment
  }

  /// Reads the configuration (`DaemonConfiguration.load`): a missing default file means the
  /// defaults; a missing explicit one is an error.
  private func loadConfiguration() throws(KeyFileError) -> DaemonConfiguration {
    try DaemonConfiguration.load(path: configPathIsExplicit ? configPath : nil)
  }

  /// Runs until SIGTERM/SIGINT; returns the exit status.
  public func run() async -> Int32 {
    let logger = DaemonLogger(environment: environment)
    let notifier = SystemdNotifier(environment: environment)
    var config: DaemonConfiguration
    do { config = try loadConfiguration() } catch {
      logger.log(.error, "configuration: \(error.description); not starting")
      return 1
    }
    logger.learnSecrets(of: config)
    // One owner per state directory, held until the daemon exits (StateLock).
    let lock: StateLock
    do {
      try StateDirectory.prepare(stateDirectory)
      lock = try StateLock.acquire(directory: stateDirectory, holder: "beaconbridge run")
    } catch {
      logger.log(.error, "\(error); not starting")
      return 1
    }
    defer { withExtendedLifetime(lock) {} }
    let store: Store
    do { store = try Store(directory: stateDirectory) } catch {
      logger.log(.error, "\(error.description); not starting")
      return 1
    }
    await store.setOutboxLimit(config.outboxMaxBatches)

    let settings = DaemonSettings(config)
    // The fleet's applied document: its settings over the file's from the first moment, and
    // pair/unpair refused while [Fleet] is configured (FleetStore.swift).
    let fleetApplied: (version: Int64, settings: [FleetSetting], digest: String?)?
    do {
      try await store.setFleetOwnsPairings(config.fleet.enabled)
      fleetApplied = try await store.fleetApplied()
    } catch {
      logger.log(.error, "\(error.description); not starting")
      return 1
    }
    if let fleetApplied { settings.setRemote(fleetApplied.settings) }
    let fleetInbox = FleetInbox()
    var fleetLink: (boxId: String, status: FleetLinkStatus)?
    if let fleet = config.fleetSettings {
      guard let boxId = config.fleet.resolvedBoxId() else {
        logger.log(
          .error,
          "[Fleet] has no BoxId and \(FleetOptions.machineIdPath) holds no machine ID; set [Fleet] BoxId. Not starting"
        )
        return 1
      }
      let status = FleetLinkStatus(FleetLinkState(broker: "\(fleet.host):\(fleet.port)", boxId: boxId))
      status.update {
        $0.appliedVersion = fleetApplied?.version
        $0.appliedSettings = fleetApplied?.settings ?? []
      }
      fleetLink = (boxId, status)
    }
    let uploads = UploadSinks()
    defer { uploads.stop() }
    let host = DaemonHost(settings: settings, uploads: uploads, logger: logger)
    let announcements = Announcements()
    let scanStatus = ScanStatus()
    let paired = PairedBeacons()
    // G-Zone: poll-and-diff into journal lines and D-Bus signals (docs/gzone.md).
    let gzone = GZonePoller(
      store: store, settings: { (settings.current.daemon.gzone, settings.current.daemon.tokenFile) },
      // The G-Zone requests trust the same CA and present the same client certificate as uploads.
      makeSource: {
        HTTPGZoneSource(configuration: $0, fallbackTokenFile: $1, tls: settings.current.daemon.uploadTLS)
      },
      log: { logger.log($0, $1) }, emit: { announcements.yield(.gzone($0)) })
    let statusChanged = Doorbell()
    let bridge = BeaconBridge(host: host, journal: store) { event in
      BridgeEventLog.log(event.event, to: logger)
      statusChanged.ring()
      if case .beaconEntered(let beacon) = event.event { paired.entered(beacon) }
      announcements.yield(.bridge(event.event))
      if case .batchPosted = event.event { gzone.tripUploaded() }
      switch event.event {
      case .tripEnded: fleetInbox.yield(.tripEnded)
      case .beaconEntered, .beaconExited, .telemetry, .beaconHealth: fleetInbox.yield(.beaconsChanged)
      default: break
      }
    }
    do {
      let pairings = try await store.pairings()
      paired.update(pairings)
      await bridge.setPairings(pairings)
      try await KeyAuthenticator.refresh(
        bridge: bridge, store: store, eidClockTolerance: host.configuration.eidClockTolerance)
    } catch {
      logger.log(.error, "\(error.description); not starting")
      return 1
    }
    do { try await bridge.start() } catch {
      logger.log(.error, "\(error.description); not starting")
      return 1
    }

    // The D-Bus API: own the name before saying READY=1.
    let bus: Connection
    let api: BridgeService
    do {
      bus = try Connection(.system)
      let reply = try await bus.requestName(BridgeServiceNames.busName)
      guard reply == .primaryOwner || reply == .alreadyOwner else {
        logger.log(
          .error,
          "another beaconbridge daemon owns \(BridgeServiceNames.busName) on the system bus; not starting")
        return 1
      }
      api = try BridgeService(
        connection: bus, bridge: bridge, store: store,
        context: BridgeServiceContext(
          scanStatus: scanStatus, paired: paired, gzone: gzone, fleet: fleetLink?.status),
        logger: logger, announcements: announcements)
    } catch {
      logger.log(
        .error,
        "cannot own \(BridgeServiceNames.busName) on the system bus (\(error)); is dbus running, and is the D-Bus policy installed? Not starting"
      )
      return 1
    }
    defer { bus.close() }
    // Ready once the API is served: the name is owned, the store is open and trips are accepted.
    // Scanning may still wait for an adapter or bluetoothd (as bluetoothd itself starts without
    // a controller); STATUS= and `doctor` say what it waits for.
    // The stop signals are caught from here on: a SIGTERM right after READY=1 (systemctl stop
    // as the unit comes up) is a clean stop, queued until the services run, not a death by
    // signal.
    let signals = SignalStream.make([SIGTERM, SIGINT, SIGHUP])
    notifier.notify("READY=1")
    logger.log(.notice, "ready: serving \(BridgeServiceNames.busName) on the system bus")

    var scan = ScanService(
      makeSource: { onWaiting in
        let config = settings.current.daemon
        return config.backend.makeSource(
          adapter: config.adapter, keep: { paired.contains($0) }, waitForHardware: true, onWaiting: onWaiting
        ) { logger.log(.info, $0) }
      },
      consume: { try await bridge.consume(source: $0, started: $1) },
      report: { condition in
        scanStatus.set(condition)
        statusChanged.ring()
      },
      log: { logger.log($0, $1) },
      explain: { ScanAdvice.explain($0, for: .service) },
      clock: ContinuousClock())
    scan.started = { scanStatus.started($0) }
    var services: [any Service] = [
      api, scan, DeadlineService(bridge: bridge),
      PairingWatcher(store: store, bridge: bridge, paired: paired, logger: logger),
      StatusReporter(bridge: bridge, scan: scanStatus, notifier: notifier, changed: statusChanged), gzone,
    ]
    if let fleet = config.fleetSettings, let (boxId, fleetStatus) = fleetLink {
      // A test's kill point inside the apply transaction (FleetDesiredTests): the store must hold
      // the old document or the new one after a kill anywhere.
      let killMidway = environment["BEACONBRIDGE_TEST_FLEET_KILL_MIDWAY"] == "1"
      let desired = FleetDesired(
        store: store, bridge: bridge, paired: paired, settings: settings, status: fleetStatus, logger: logger,
        overTLS: fleet.tls, midway: { if killMidway { raise(SIGKILL) } })
      services.append(
        FleetLink(
          settings: fleet, topics: FleetTopics(config.fleet, boxId: boxId), version: Self.version,
          status: fleetStatus, logger: logger, inbox: fleetInbox, desired: { await desired.handle($0) },
          beacons: FleetBeaconReport(bridge: bridge, boxId: boxId),
          reportInterval: .seconds(config.fleet.reportInterval)))
    }
    if let interval = notifier.watchdogInterval {
      services.append(WatchdogService(notifier: notifier, interval: interval))
    }
    let group = ServiceGroup(
      services: services, signals: signals,
      reload: {
        notifier.notify("RELOADING=1")
        do {
          let fresh = try loadConfiguration()
          logger.learnSecrets(of: fresh)
          // The fleet's settings lie over the new file as over the old: a file they no longer
          // fit (exitTimeoutMax below the fleet's exitTimeout) is refused before anything uses it.
          let problems = DaemonSettings.bridge(file: fresh, remote: settings.remote).problems()
          guard problems.isEmpty else {
            throw BridgeError(
              .invalidConfiguration,
              "invalid configuration with the fleet's settings over it: " + problems.joined(separator: "; "))
          }
          settings.update(fresh)
          // A changed [Upload] or [MQTT] gets its new sink now, and the old one (its broker
          // connection) stops here, not at the next post.
          _ = uploads.sink(for: fresh)
          await store.setOutboxLimit(fresh.outboxMaxBatches)
          try await bridge.reload()
          // The keys' resolver takes the new [ActiveBeacon] eidClockTolerance; the beacons'
          // clocks and heard windows carry over.
          try await KeyAuthenticator.refresh(
            bridge: bridge, store: store, eidClockTolerance: host.configuration.eidClockTolerance)
          logger.log(.notice, "configuration reloaded from \(configPath)")
        } catch {
          logger.log(.error, "configuration not reloaded, the old one stays: \(error)")
        }
        notifier.notify("READY=1")
      })
    var outcome: Int32 = 0
    switch await group.run() {
    case .signal(let number):
      logger.log(.notice, "stopping (signal \(number))")
      notifier.notify("STOPPING=1")
    case .serviceEnded(let name, let error):
      logger.log(.error, "\(name) stopped\(error.map { ": \($0)" } ?? ""); stopping")
      notifier.notify("STOPPING=1")
      outcome = 1
    }
    // Put the radio back (StopDiscovery, or the controller's scan state) before exiting.
    if let source = scanStatus.source { await source.finished(within: .seconds(5)) }
    // The EID beacons' clocks as last heard, so the next start resumes them and refuses a replay.
    do throws(StoreError) { try await KeyAuthenticator.saveTracking(of: bridge, to: store) } catch {
      logger.log(.warning, "cannot keep the EID beacons' clocks: \(error.description)")
    }
    logger.log(.info, "stopped")
    return outcome
  }
}
