import BeaconCore
import BlueZ
import BridgeDaemon
import DBus
import Foundation
import HCI
import Synchronization

/// `beaconbridge scan`: the beacons in range, live, with no daemon.
public struct ScanCommand: BridgeCommand {
  public static let name = "scan"
  public static let abstract = "Show the beacons in range, live (works without the daemon)."
  public static let usage =
    "beaconbridge scan [--duration S] [--backend bluez|hci] [--adapter hciN] [--state-dir DIR] [--json]"
  public static let discussion = """
    Scans through bluetoothd (D-Bus, the default) or the raw HCI socket (--backend hci, which
    needs CAP_NET_RAW and an adapter bluetoothd is not scanning with), and runs what it hears
    through the real pipeline: presence, smoothed RSSI, proximity, and the active beacon among
    the pairings in the store (when the store can be read).

    On a terminal the table refreshes in place; otherwise, and with --json, events print as they
    happen. Ctrl-C stops; so does --duration.

    OPTIONS:
      --duration S      Stop after S seconds (default: until interrupted).
      --backend B       bluez (default) or hci.
      --adapter hciN    The adapter, hci0 to hci9999 (default: the first powered one; hci0 for
                        --backend hci).
    \(StoreOptions.help)
      --json            One JSON object per line: beaconEntered, beaconExited,
                        activeBeaconChanged, telemetry (Eddystone-TLM), eddystoneURL,
                        beaconHealth and rejected, with uuid, major and minor for iBeacons
                        and measuredPower or txPower (docs/dbus-api.md, "Output fields").
    """

  public var duration: Double?
  public var backend: ScanBackend
  public var adapter: HCIDeviceID?
  public var json: Bool
  var store: StoreOptions

  public init(_ arguments: inout Arguments) throws(UsageError) {
    json = arguments.flag("--json")
    duration = try arguments.number("--duration", in: 0.1...31_536_000)
    let backendText = try arguments.option("--backend") ?? "bluez"
    guard let backend = ScanBackend(rawValue: backendText) else {
      throw UsageError("--backend must be bluez or hci, not \(backendText.quotedForMessage)")
    }
    self.backend = backend
    adapter = try arguments.option("--adapter", as: HCIDeviceID.self)
    store = try StoreOptions(&arguments)
  }

  /// A scan configured for `pair --nearest`.
  static func parseForNearest(backend: ScanBackend, adapter: HCIDeviceID?) throws -> ScanCommand {
    var arguments = Arguments(
      ["--backend", backend.rawValue] + (adapter.map { ["--adapter", $0.name] } ?? []), command: "pair")
    return try ScanCommand(&arguments)
  }

  /// The source for the chosen backend; its progress lines go to stderr.
  func makeSource(_ console: any Console, keep: @escaping @Sendable (BluetoothAddress) -> Bool)
    -> any AdvertisementSource
  {
    backend.makeSource(adapter: adapter, keep: keep) { console.err("beaconbridge: \($0)\n") }
  }

  public func run(_ console: any Console) async -> Int32 {
    var configuration = BridgeConfiguration()
    backend.apply(to: &configuration)
    // Pairings only label beacons and pick the active one; scanning works without the store,
    // and creates none: a mistyped --state-dir is said, not made.
    var pairings: [Pairing] = []
    var opened: Store?
    do throws(StateDirectoryError) {
      try StateDirectory.requireExisting(store.directory, store: true)
      opened = try? Store(directory: store.directory)
      if let opened, let kept = try? await opened.pairings() { pairings = kept }
    } catch {
      if store.stateDir != nil {
        console.err("beaconbridge: scanning without pairings: \(error.description)\n")
      }
    }
    let view = ScanView(console: console, live: console.isTerminal && !json, json: json)
    // Paired beacons' addresses are never pruned from BlueZ's cache.
    let paired = PairedBeacons()
    paired.update(pairings)
    let bridge = BeaconBridge(host: ScanHost(configuration: configuration, console: console)) { event in
      if case .beaconEntered(let beacon) = event.event { paired.entered(beacon) }
      view.record(event)
    }
    await bridge.setPairings(pairings)
    // Pairings by key resolve EIDs and private addresses (a store this user cannot read has none),
    // through the daemon's owner of them (`PairingBook`), searched for off the bridge as the
    // daemon does (`EIDSearchService`). Nothing is written: the store is the daemon's.
    var searches: Task<Void, Never>?
    if let opened {
      let book = await PairingBook.starting(store: opened, bridge: bridge, paired: paired)
      if (try? await book.refresh()) != nil {
        searches = Task { try? await EIDSearchService(keys: book.keys).run() }
      }
    }
    defer { searches?.cancel() }
    do { try await bridge.start() } catch {
      console.err("beaconbridge: \(error)\n")
      return ExitStatus.failure
    }
    let source = makeSource(console) { paired.contains($0) }
    if !json { console.err("beaconbridge: scanning with \(source.description)\n") }
    let duration = self.duration
    let outcome = await Self.scan(
      bridge: bridge, source: source, until: { await StopSignal.wait(duration: duration) }
    ) {
      guard view.live else { return }
      while !Task.isCancelled {
        await view.draw(bridge: bridge, source: source.description)
        try? await Task.sleep(for: .seconds(1))
      }
    }
    if case .failure(let error) = outcome {
      console.err("beaconbridge: \(ScanAdvice.explain(error))\n")
      return ExitStatus.failure
    }
    if !json {
      let status = await bridge.status
      if view.live {
        await view.draw(bridge: bridge, source: source.description)
      } else {
        console.out("\n" + ScanView.table(status))
      }
    }
    return ExitStatus.success
  }

  /// Runs `bridge` on `source` until `stop` returns or the scan fails (whichever is first), with
  /// `alongside` running meanwhile; then puts the radio back. Returns how the scan ended.
  static func scan(
    bridge: BeaconBridge, source: any AdvertisementSource, until stop: @escaping @Sendable () async -> Void,
    alongside: @escaping @Sendable () async -> Void = {}
  ) async -> Result<Void, any Error> {
    let outcome: Result<Void, any Error> = await withTaskGroup(of: Result<Void, any Error>?.self) { group in
      group.addTask {
        do {
          try await bridge.run(source: source)
          return .success(())
        } catch is CancellationError {
          return .success(())
        } catch {
          return .failure(error)
        }
      }
      group.addTask {
        await stop()
        return nil
      }
      group.addTask {
        await alongside()
        // Finishing early is no reason to stop the scan.
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        return nil
      }
      var outcome: Result<Void, any Error> = .success(())
      if let first = await group.next(), let result = first { outcome = result }
      group.cancelAll()
      return outcome
    }
    await source.finished(within: .seconds(5))
    return outcome
  }
}

/// The scan's host: no trips, logs to stderr.
struct ScanHost: ScopeHost {
  let configuration: BridgeConfiguration
  let console: any Console
  func log(_ record: LogRecord) {
    if record.level.rawValue <= LogRecord.Level.notice.rawValue {
      console.err("beaconbridge: \(record.message)\n")
    }
  }
  func postTripEventBatch(_ batch: TaggedTripBatch) async throws {}
}

/// Ctrl-C (SIGINT) or SIGTERM, or a duration running out.
enum StopSignal {
  static func wait(duration: Double?) async {
    let signals = SignalStream.make([SIGINT, SIGTERM])
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        for await _ in signals { return }
      }
      if let duration {
        group.addTask { try? await Task.sleep(for: .seconds(duration)) }
      }
      await group.next()
      group.cancelAll()
    }
  }
}

/// The scan's output: events as lines, or a table refreshed in place.
final class ScanView: Sendable {
  let console: any Console
  let live: Bool
  let json: Bool
  private let recent = Mutex<[String]>([])

  init(console: any Console, live: Bool, json: Bool) {
    self.console = console
    self.live = live
    self.json = json
  }

  func record(_ event: TimedBridgeEvent) {
    switch event.event {
    case .beaconEntered, .beaconExited, .activeBeaconChanged, .rejected, .telemetry, .eddystoneURL,
      .beaconHealth:
      break
    default: return
    }
    if json {
      console.out(event.jsonLine + "\n")
      return
    }
    guard let line = DemoView.describe(event) else { return }
    let text = String(format: "%7.1fs  ", event.at.seconds) + line
    if live {
      recent.withLock {
        $0.append(text)
        if $0.count > 8 { $0.removeFirst($0.count - 8) }
      }
    } else {
      console.out(text + "\n")
    }
  }

  func draw(bridge: BeaconBridge, source: String) async {
    let status = await bridge.status
    let now = await bridge.now
    var screen = "beaconbridge scan: \(source), \(Int(now.seconds)) s (Ctrl-C stops)\n\n"
    screen += Self.table(status, now: now)
    screen += "\nRECENT EVENTS\n" + recent.withLock { $0 }.map { "  " + $0 }.joined(separator: "\n") + "\n"
    console.out("\u{1B}[H" + screen.replacingOccurrences(of: "\n", with: "\u{1B}[K\n") + "\u{1B}[J")
  }

  static func table(_ status: BridgeStatus, now: Timestamp? = nil) -> String {
    var out = "BEACONS IN RANGE\n"
    out +=
      "  KIND       IDENTITY                                        SMOOTH  PROX       LAST SEEN  POWER  BATTERY  TEMP    PAIRED\n"
    let pairings = PairingSet(status.pairings)
    for b in status.beaconsInRange {
      let identity: String
      if let i = b.id.identity {
        identity = "\(i.uuid.uuidString) \(i.major)/\(i.minor)"
      } else {
        identity = "\(b.id)"
      }
      let ago = now.map { String(format: "%.0fs ago", max(0, $0 - b.lastSeen)) } ?? "-"
      out += "  " + b.id.kind.padding(toLength: 9) + "  " + identity.padding(toLength: 46) + "  "
      out += (b.smoothedRSSI.map { String(format: "%.1f", $0) } ?? "?").padding(toLength: 6) + "  "
      out += b.proximity.rawValue.padding(toLength: 9) + "  " + ago.padding(toLength: 9) + "  "
      // The frame's own calibration: measured power at 1 m, or Eddystone's Tx power at 0 m ("@0").
      let power: String
      switch b.id {
      case .keyed(let k) where k.scheme == .rpa: power = b.powerAt1m.map { "\($0)" } ?? "-"
      case .eddystone, .keyed: power = b.powerAt1m.map { "\($0 + 41)@0" } ?? "-"
      case .iBeacon, .altBeacon: power = b.powerAt1m.map { "\($0)" } ?? "-"
      }
      let telemetry = status.health[b.id]?.telemetry
      out += power.padding(toLength: 5) + "  "
      out += (telemetry?.batteryMillivolts.map { "\($0)mV" } ?? "-").padding(toLength: 7) + "  "
      out += (telemetry?.temperature.map { String(format: "%.1fC", $0) } ?? "-").padding(toLength: 6) + "  "
      out += (pairings.pairing(for: b.id)?.deviceId.rawValue ?? "-") + "\n"
    }
    if status.beaconsInRange.isEmpty { out += "  (none yet)\n" }
    out += "\nACTIVE BEACON: " + (status.active.map { "\($0.deviceId) (\($0.id))" } ?? "none") + "\n"
    return out
  }
}
