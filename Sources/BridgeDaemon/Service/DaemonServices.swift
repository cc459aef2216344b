import BeaconCore
import BlueZ
import FoundationEssentials
import Synchronization

// The daemon's small services and what they share. Each runs until cancelled (`Service`).

/// `WATCHDOG=1` at half of `WATCHDOG_USEC`, and never more often than `shortestInterval`.
struct WatchdogService: Service {
  /// The floor under the ping interval. `WATCHDOG_USEC=1` asks for a ping every half
  /// microsecond, which would turn this task into a busy loop that starves the scan path on a
  /// two-core box; no real watchdog needs ten pings a second.
  static let shortestInterval: Duration = .milliseconds(100)

  let notifier: SystemdNotifier
  let interval: Duration

  /// `requested` is `SystemdNotifier.watchdogInterval`; the service pings at `interval(for:)`.
  init(notifier: SystemdNotifier, interval requested: Duration) {
    self.notifier = notifier
    interval = Self.interval(for: requested)
  }

  /// The interval between pings for a requested one: the request, but not below the floor.
  static func interval(for requested: Duration) -> Duration { max(requested, shortestInterval) }

  func run() async throws {
    while true {
      notifier.notify("WATCHDOG=1")
      try await Task.sleep(for: interval)
    }
  }
}

/// Trip deadlines (late window, hold, post retries) on their own task, whether or not a source
/// scans.
struct DeadlineService: Service {
  let bridge: BeaconBridge
  func run() async throws { try await bridge.runDeadlines() }
}

/// Pairings written by `beaconbridge pair` without the daemon (straight into the store) are
/// picked up from SQLite's `data_version`, checked when a file in the state directory changes
/// (inotify) and at most once per `interval`. Where inotify cannot watch the directory, it checks
/// every `interval` instead (and says so).
struct PairingWatcher: Service {
  let store: Store
  let bridge: BeaconBridge
  let paired: PairedBeacons
  let logger: DaemonLogger
  var interval: Duration = .seconds(2)

  func run() async throws {
    var version = try? await store.dataVersion()
    let changed = Doorbell()
    let directory = StateDirectory.parent(of: store.path)
    var watch: DirectoryWatch?
    switch DirectoryWatch.start(directory, prefix: Store.fileName, ringing: changed) {
    case .success(let started): watch = started
    case .failure(let error):
      logger.log(
        .warning, "cannot watch \(directory) (\(error)); checking for new pairings every \(interval)")
    }
    defer { watch?.stop() }
    while true {
      if watch != nil { await changed.wait() }
      // Coalesces a burst of writes (the daemon's own, during a trip) into one check.
      try await Task.sleep(for: interval)
      guard let now = try? await store.dataVersion(), now != version else { continue }
      version = now
      if let pairings = try? await store.pairings(), pairings != (await bridge.status.pairings) {
        paired.update(pairings)
        await bridge.setPairings(pairings)
        do {
          try await KeyAuthenticator.refresh(
            bridge: bridge, store: store, eidClockTolerance: bridge.host.configuration.eidClockTolerance)
        } catch {
          logger.log(.error, "cannot read the pairings by key: \(error.description)")
        }
        logger.log(.notice, "pairings changed: \(pairings.count) pairing(s)")
      }
    }
  }
}

/// `STATUS=` lines as the bridge's state changes, and freed memory handed back after many
/// beacons left at once (a flood expiring), or the daemon would stay at its peak size. It runs
/// when `changed` rings (a bridge event, a change in scanning), at most once per `interval`.
struct StatusReporter: Service {
  let bridge: BeaconBridge
  let scan: ScanStatus
  let notifier: SystemdNotifier
  let changed: Doorbell
  var interval: Duration = .seconds(2)

  func run() async throws {
    var last = ""
    var release = PeakShrink()
    while true {
      await changed.wait()
      try await Task.sleep(for: interval)
      let current = await bridge.status
      if release.shouldRelease(tracked: current.beaconsInRange.count) { MallocTuning.returnFreedMemory() }
      let line = Self.line(current, scan: scan.condition)
      if line != last {
        notifier.notify("STATUS=\(line)")
        last = line
      }
    }
  }

  /// What scanning does, then (once the bridge runs) beacons, the active beacon and the backlog.
  static func line(_ status: BridgeStatus?, scan: ScanCondition) -> String {
    var parts = [scan.summary]
    guard let status else { return parts[0] }
    parts.append("\(status.beaconsInRange.count) beacon(s) in range")
    parts.append("active: \(status.active?.deviceId ?? "none")")
    let held = status.trips.reduce(0) { $0 + $1.heldBatches }
    parts.append("\(status.outboundBatches + held) batch(es) waiting")
    return parts.joined(separator: "; ")
  }
}

/// What scanning does now, and the source doing it (whose cleanup the daemon awaits at exit).
/// Written by `ScanService`; read by `StatusReporter` and the D-Bus `Status`.
final class ScanStatus: Sendable {
  private let state = Mutex<(condition: ScanCondition, source: (any AdvertisementSource)?)>((.starting, nil))
  var condition: ScanCondition { state.withLock { $0.condition } }
  var source: (any AdvertisementSource)? { state.withLock { $0.source } }
  func set(_ condition: ScanCondition) { state.withLock { $0.condition = condition } }
  func started(_ source: any AdvertisementSource) { state.withLock { $0.source = source } }
  /// What the running BlueZ source dropped while the bridge held a batch (0 for HCI).
  var droppedAdvertisements: Int { (source as? BlueZAdvertisementSource)?.droppedAdvertisements ?? 0 }
  /// The entries past a device's cap that the running BlueZ source left out (0 for HCI).
  var manufacturerDataOverLimit: Int { (source as? BlueZAdvertisementSource)?.manufacturerDataOverLimit ?? 0 }
}
