import BeaconCore
import BlueZ
import DBus
import Foundation
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
/// one if the new one is bad. Pairings changed by `beaconbridge pair` while it runs are picked up
/// within two seconds (SQLite's `data_version`).
public struct Daemon: Sendable {
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

  /// Reads the configuration. A missing default file means the defaults; a missing explicit one
  /// is an error.
  public func loadConfiguration() throws(KeyFileError) -> DaemonConfiguration {
    guard FileManager.default.fileExists(atPath: configPath) else {
      if configPathIsExplicit { throw KeyFileError(file: configPath, line: 0, message: "no such file") }
      return DaemonConfiguration()
    }
    let bytes: [UInt8]
    do { bytes = try InputReader.read(configPath, limit: DaemonConfiguration.maximumFileSize) } catch {
      throw KeyFileError(file: configPath, line: 0, message: "cannot read it: \(error.reason)")
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      throw KeyFileError(file: configPath, line: 0, message: "cannot read it: it is not UTF-8 text")
    }
    return try DaemonConfiguration.parse(text, file: configPath)
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
    let store: Store
    do { store = try Store(directory: stateDirectory) } catch {
      logger.log(.error, "\(error.description); not starting")
      return 1
    }
    await store.setOutboxLimit(config.outboxMaxBatches)

    let settings = DaemonSettings(config)
    let host = DaemonHost(settings: settings, logger: logger)
    let state = DaemonState()
    // G-Zone: poll-and-diff into journal lines and D-Bus signals (docs/gzone.md).
    let gzone = GZonePoller(
      store: store, settings: { (settings.current.daemon.gzone, settings.current.daemon.tokenFile) },
      log: { logger.log($0, $1) }, emit: { state.service?.signal(gzone: $0) })
    state.setGZone(gzone)
    let bridge = BeaconBridge(host: host, journal: store) { event in
      state.observe(event, logger: logger)
      state.service?.signal(event.event)
      if case .batchPosted = event.event { gzone.tripUploaded() }
    }
    do {
      let pairings = try await store.pairings()
      state.setPairings(pairings)
      await bridge.setPairings(pairings)
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
    do {
      bus = try Connection(.system)
      let reply = try await bus.requestName(BridgeServiceNames.busName)
      guard reply == .primaryOwner || reply == .alreadyOwner else {
        logger.log(
          .error,
          "another beaconbridge daemon owns \(BridgeServiceNames.busName) on the system bus; not starting")
        return 1
      }
      state.setService(
        try BridgeService(
          connection: bus, bridge: bridge, store: store, state: state, host: host, logger: logger))
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
    notifier.notify("READY=1")
    logger.log(.notice, "ready: serving \(BridgeServiceNames.busName) on the system bus")

    let signals = SignalStream.make([SIGTERM, SIGINT, SIGHUP])
    let outcome: Int32 = await withTaskGroup(of: Int32?.self) { group in
      // Scanning, restarted with backoff while the backend is unavailable.
      group.addTask {
        let scan = ScanService(
          makeSource: { onWaiting in
            Self.makeSource(settings.current.daemon, logger: logger, state: state, onWaiting: onWaiting)
          },
          consume: { try await bridge.consume(source: $0) },
          report: { condition in
            state.setScan(condition)
            notifier.notify("STATUS=\(Self.statusLine(nil, scan: condition))")
          },
          log: { logger.log($0, $1) },
          explain: { ScanAdvice.explain($0, for: .service) },
          clock: ContinuousClock())
        await scan.run(started: { state.setSource($0) })
        return nil
      }
      // Trip deadlines (late window, hold, retries) run whether or not a source scans.
      group.addTask {
        try? await bridge.runDeadlines()
        return nil
      }
      // The watchdog: WATCHDOG=1 at half of WATCHDOG_USEC.
      if let interval = notifier.watchdogInterval {
        group.addTask {
          while !Task.isCancelled {
            notifier.notify("WATCHDOG=1")
            try? await Task.sleep(for: interval)
          }
          return nil
        }
      }
      // Pairings written by `beaconbridge pair` while we run, and STATUS= lines.
      group.addTask {
        var version = try? await store.dataVersion()
        var lastStatus = ""
        // Many beacons gone at once (a flood expiring or reported lost): hand glibc's freed pages
        // back, or the daemon would stay at its peak size.
        var release = PeakShrink()
        while !Task.isCancelled {
          try? await Task.sleep(for: .seconds(2))
          if let now = try? await store.dataVersion(), now != version {
            version = now
            if let pairings = try? await store.pairings(), pairings != (await bridge.status.pairings) {
              state.setPairings(pairings)
              await bridge.setPairings(pairings)
              logger.log(.notice, "pairings changed: \(pairings.count) pairing(s)")
            }
          }
          let current = await bridge.status
          if release.shouldRelease(tracked: current.beaconsInRange.count) { MallocTuning.returnFreedMemory() }
          let status = Self.statusLine(current, scan: state.scan)
          if status != lastStatus {
            notifier.notify("STATUS=\(status)")
            lastStatus = status
          }
        }
        return nil
      }
      // The G-Zone poller's interval loop (idle while no [GZone] is configured).
      group.addTask {
        await gzone.run()
        return nil
      }
      // Signals.
      group.addTask {
        for await number in signals {
          if number == SIGHUP {
            notifier.notify("RELOADING=1")
            do {
              let fresh = try loadConfiguration()
              logger.learnSecrets(of: fresh)
              settings.update(fresh)
              await store.setOutboxLimit(fresh.outboxMaxBatches)
              try await bridge.reload()
              logger.log(.notice, "configuration reloaded from \(configPath)")
            } catch {
              logger.log(.error, "configuration not reloaded, the old one stays: \(error)")
            }
            notifier.notify("READY=1")
          } else {
            logger.log(.notice, "stopping (signal \(number))")
            notifier.notify("STOPPING=1")
            return 0
          }
        }
        return 0
      }
      let status = await group.next() ?? 0
      group.cancelAll()
      return status ?? 0
    }
    // Put the radio back (StopDiscovery, or the controller's scan state) before exiting.
    if let source = state.source { await source.finished(within: .seconds(5)) }
    logger.log(.info, "stopped")
    return outcome
  }

  static func makeSource(
    _ config: DaemonConfiguration, logger: DaemonLogger, state: DaemonState,
    onWaiting: @escaping @Sendable (String?) -> Void
  ) -> any AdvertisementSource {
    switch config.backend {
    case .bluez:
      var options = BlueZAdvertisementSource.Options()
      options.keep = { state.isPairedAddress($0) }
      options.waitForHardware = true
      options.onWaiting = onWaiting
      return BlueZAdvertisementSource(bus: .system, adapter: config.adapter, options: options) { line in
        logger.log(.info, line)
      }
    case .hci:
      let index = config.adapter.flatMap { UInt16($0.dropFirst(3)) } ?? 0
      return HCIAdvertisementSource(configuration: HCIScanConfiguration(adapter: index))
    }
  }

  /// The `STATUS=` line: what scanning does, then (once the bridge runs) beacons, the active
  /// beacon and the backlog.
  static func statusLine(_ status: BridgeStatus?, scan: ScanCondition) -> String {
    var parts = [scan.summary]
    guard let status else { return parts[0] }
    parts.append("\(status.beaconsInRange.count) beacon(s) in range")
    parts.append("active: \(status.active?.deviceId ?? "none")")
    let held = status.trips.reduce(0) { $0 + $1.heldBatches }
    parts.append("\(status.outboundBatches + held) batch(es) waiting")
    return parts.joined(separator: "; ")
  }
}

/// The configuration the running daemon uses, replaced on SIGHUP.
final class DaemonSettings: Sendable {
  private let value: Mutex<DaemonConfiguration>
  init(_ config: DaemonConfiguration) { value = Mutex(config) }
  var current: (daemon: DaemonConfiguration, bridge: BridgeConfiguration) {
    value.withLock { config in
      var bridge = config.bridge
      config.backend.apply(to: &bridge)
      return (config, bridge)
    }
  }
  func update(_ config: DaemonConfiguration) { value.withLock { $0 = config } }
}

/// What the daemon's tasks share: whether it scans, and paired beacons' addresses.
final class DaemonState: Sendable {
  private struct State {
    var scan = ScanCondition.starting
    var source: (any AdvertisementSource)?
    var service: BridgeService?
    var gzone: GZonePoller?
    var pairings = PairingSet()
    /// Addresses of paired beacons heard so far: never pruned from BlueZ's cache.
    var paired: Set<BluetoothAddress> = []
  }

  private let state = Mutex(State())

  var source: (any AdvertisementSource)? { state.withLock { $0.source } }
  func setSource(_ source: any AdvertisementSource) { state.withLock { $0.source = source } }
  var service: BridgeService? { state.withLock { $0.service } }
  func setService(_ service: BridgeService) { state.withLock { $0.service = service } }
  var gzone: GZonePoller? { state.withLock { $0.gzone } }
  func setGZone(_ poller: GZonePoller) { state.withLock { $0.gzone = poller } }

  func setPairings(_ pairings: [Pairing]) { state.withLock { $0.pairings = PairingSet(pairings) } }

  var scan: ScanCondition { state.withLock { $0.scan } }
  func setScan(_ condition: ScanCondition) { state.withLock { $0.scan = condition } }
  func isPairedAddress(_ address: BluetoothAddress) -> Bool { state.withLock { $0.paired.contains(address) } }

  func observe(_ event: TimedBridgeEvent, logger: DaemonLogger) {
    switch event.event {
    case .activeBeaconChanged(let active):
      logger.log(.notice, "active beacon: \(active.map { "\($0.deviceId) (\($0.id))" } ?? "none")")
    case .tripTagged(let tripId, let resolution):
      logger.log(
        .notice, "trip \(tripId) tagged \(resolution.deviceId ?? "unresolved") (\(resolution.reason))")
    case .batchDeadLettered(let batch, let reason):
      logger.log(.error, "trip \(batch.tripId) batch \(batch.sequence) refused by the backend: \(reason)")
    case .beaconEntered(let beacon):
      state.withLock { s in
        if s.pairings.pairing(for: beacon.id) != nil { s.paired.insert(beacon.address) }
      }
      logger.log(.debug, "beacon entered: \(beacon.id) at \(beacon.address)")
    default:
      break
    }
  }
}

/// The daemon's ScopeHost: beacon mode, logs to the journal, uploads over HTTP.
struct DaemonHost: ScopeHost {
  let settings: DaemonSettings
  let logger: DaemonLogger

  var configuration: BridgeConfiguration { settings.current.bridge }

  func log(_ record: LogRecord) { logger.log(record.level, record.message) }

  func onBeaconTripStart(_ trip: BeaconTripStart) async {
    await trip.snapshotActiveBeacon()
  }

  func postTripEventBatch(_ batch: TaggedTripBatch) async throws {
    let config = settings.current.daemon
    guard let text = config.uploadURL, let url = URL(string: text) else {
      throw RetryablePostFailure("no [Upload] URL is configured; the batch waits in the outbox")
    }
    try await HTTPUploader(url: url, tokenFile: config.tokenFile, timeout: config.uploadTimeout).post(batch)
  }
}

/// A source whose stream is already running (the daemon starts it itself so that it can say
/// READY=1 only once scanning has started).
struct StartedSource: AdvertisementSource {
  let stream: AsyncThrowingStream<[SourceEvent], any Error>
  let description: String
  func eventBatches() async throws -> AsyncThrowingStream<[SourceEvent], any Error> { stream }
  func events() async throws -> AsyncThrowingStream<SourceEvent, any Error> { Self.flatten(stream) }
}
