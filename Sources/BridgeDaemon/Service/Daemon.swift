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
  /// The program's version, spelled only here: `beaconbridge --version`, the fleet's birth
  /// message, the man pages and the .deb (the Makefile reads this line).
  public static let version = "0.1.0"

  /// What a stop may spend, from the signal: the services, then the radio. With the EID clocks'
  /// write after, a stop takes well under 5 s, whatever a broker or a backend does.
  static let stopBudget = (services: Duration.seconds(3), radio: Duration.seconds(1))

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
  func loadConfiguration() throws(KeyFileError) -> DaemonConfiguration {
    try DaemonConfiguration.load(path: configPathIsExplicit ? configPath : nil)
  }

  /// Runs until SIGTERM/SIGINT; returns the exit status.
  ///
  /// The composition root: it builds the parts in start-up order and hands them to a
  /// `ServiceGroup`. A step that fails has said why (Daemon+Start.swift); the daemon does not
  /// start.
  public func run() async -> Int32 {
    let logger = DaemonLogger(environment: environment)
    let notifier = SystemdNotifier(environment: environment)
    let hooks = DaemonTestHooks(environment: environment)
    let config: DaemonConfiguration
    do { config = try loadConfiguration() } catch {
      logger.log(.error, "configuration: \(error.description); not starting")
      return 1
    }
    logger.learnSecrets(of: config)
    // One owner per state directory, held until the daemon exits (StateLock).
    guard let lock = lockStateDirectory(logger) else { return 1 }
    defer { withExtendedLifetime(lock) {} }
    guard let (store, fleetApplied) = await openStore(config, logger) else { return 1 }
    let settings = DaemonSettings(config)
    if let fleetApplied { settings.setRemote(fleetApplied.settings) }
    let fleetInbox = FleetInbox()
    var fleet: DaemonFleet?
    if let broker = config.fleetSettings {
      fleet = DaemonFleet(broker, options: config.fleet, applied: fleetApplied, logger: logger)
      guard fleet != nil else { return 1 }
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
    let events = BridgeEventFanOut(
      logger: logger, statusChanged: statusChanged, paired: paired, announcements: announcements,
      gzone: gzone, fleetInbox: fleetInbox)
    let bridge = BeaconBridge(host: host, journal: store) { events.deliver($0) }
    // The pairings' and keys' one owner; the keys' searches run in EIDSearchService.
    let book = await PairingBook.starting(store: store, bridge: bridge, paired: paired)
    let posting = await bridge.startPosting()
    defer { posting.cancel() }
    guard await arm(bridge, book: book, logger: logger) else { return 1 }
    guard
      let (bus, api) = await serveAPI(
        bridge: bridge, store: store,
        context: BridgeServiceContext(
          scanStatus: scanStatus, book: book, gzone: gzone, fleet: fleet?.status),
        logger: logger, announcements: announcements)
    else { return 1 }
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

    var services: [any Service] = [
      api,
      ScanService.daemon(
        settings: settings, paired: paired, bridge: bridge, status: scanStatus, changed: statusChanged,
        logger: logger),
      DeadlineService(bridge: bridge), PostingService(posting: posting),
      EIDSearchService(keys: book.keys),
      TrackingSaver(book: book, logger: logger),
      PairingWatcher(book: book, logger: logger),
      StatusReporter(bridge: bridge, scan: scanStatus, notifier: notifier, changed: statusChanged), gzone,
    ]
    if let fleet {
      services.append(
        fleet.link(
          options: config.fleet, store: store, bridge: bridge, book: book, settings: settings,
          logger: logger, inbox: fleetInbox, hooks: hooks))
    }
    if let interval = notifier.watchdogInterval {
      services.append(WatchdogService(notifier: notifier, interval: interval))
    }
    let reload = DaemonReload(
      daemon: self, notifier: notifier, logger: logger, settings: settings, uploads: uploads, store: store,
      bridge: bridge, host: host, book: book, fleetLink: FleetLinkIdentity(config))
    // A stop takes at most 5 s (systemd's TimeoutStopSec is far above): the services get 3 s
    // (the fleet's offline message 2 s of it), the radio 1 s, then the EID clocks are written.
    let group = ServiceGroup(
      services: services, signals: signals, stopBudget: Self.stopBudget.services,
      // At the signal, the upload abandons a publish in flight: its batch stays in the outbox.
      stopping: { uploads.stop() }, reload: { await reload.run() })
    let (reason, leftBehind) = await group.runReporting()
    if !leftBehind.isEmpty {
      logger.log(
        .warning,
        "stopping without waiting longer for \(leftBehind.joined(separator: ", ")) (a stop takes at most \(Self.stopBudget.services) of its 5 s)"
      )
    }
    return await stop(
      after: reason, scanStatus: scanStatus, book: book, logger: logger,
      notifier: notifier)
  }
}
