import BeaconCore
import Foundation
import Synchronization

/// `beaconbridge demo`: the embedded default. A scripted drive through the real pipeline, in
/// compressed real time, with no Bluetooth.
public struct DemoCommand: BridgeCommand {
  public static let name = "demo"
  public static let abstract = "Play a scripted drive through the real pipeline; needs no Bluetooth."
  public static let usage = "beaconbridge demo [--speed X] [--json]"
  public static let discussion = """
    A simulated radio: van 7's beacon in the cab (paired to UNIT-0042, losing 40% of its
    packets), van 9's beacon (paired to UNIT-0099) passing by at trip start, and a strong
    unpaired beacon passing by. Trip t1 is tagged at its start; trip t2 starts with no beacon,
    holds its first batch, and is tagged when the beacon comes back late.

    On a terminal the beacon table refreshes in place; otherwise events print as lines. The
    drive is 170 s of virtual time, played at 10x by default (about 17 s).

    OPTIONS:
      --speed X   Virtual seconds per real second (1 to 10000; default 10).
      --json      Print the events as JSON lines, as 'simulate' does.
    """

  public var speed: Double
  public var json: Bool

  public init(_ arguments: inout Arguments) throws(UsageError) {
    json = arguments.flag("--json")
    speed = try arguments.number("--speed", in: 1...10_000) ?? 10
  }

  public func run(_ console: any Console) async -> Int32 {
    let scenario = DemoDrive.scenario
    let view = DemoView(console: console, live: console.isTerminal && !json, json: json, speed: speed)
    let started = ContinuousClock.now
    let speed = self.speed
    do {
      let host = try await ScenarioRunner(scenario: scenario).run(
        emit: { view.record($0) },
        report: { view.note($0) },
        pace: { virtual, bridge in
          let target = started.advanced(by: .seconds(virtual / speed))
          try? await Task.sleep(until: target, clock: .continuous)
          await view.refresh(at: virtual, bridge: bridge, force: virtual >= scenario.end)
        })
      view.finish(posted: host.posted)
    } catch {
      console.err("beaconbridge: demo failed: \(error)\n")
      return ExitStatus.failure
    }
    return ExitStatus.success
  }
}

/// What the demo shows: a table of beacons in range, the active beacon, trips, and the events.
final class DemoView: Sendable {
  let console: any Console
  let live: Bool
  let json: Bool
  let speed: Double
  private struct State {
    var recent: [String] = []
    var lastDraw: ContinuousClock.Instant?
    var cleared = false
  }

  private let state = Mutex(State())

  init(console: any Console, live: Bool, json: Bool, speed: Double) {
    self.console = console
    self.live = live
    self.json = json
    self.speed = speed
  }

  func record(_ event: TimedBridgeEvent) {
    if json {
      console.out(event.jsonLine + "\n")
      return
    }
    guard let line = Self.describe(event) else { return }
    let text = String(format: "%7.1fs  ", event.at.seconds) + line
    if live {
      state.withLock {
        $0.recent.append(text)
        if $0.recent.count > 12 { $0.recent.removeFirst($0.recent.count - 12) }
      }
    } else {
      console.out(text + "\n")
    }
  }

  func note(_ line: ScenarioLine) {
    if json { console.out(line.jsonLine + "\n") } else { console.out(line.jsonLine + "\n") }
  }

  /// Redraws the screen, at most ten times a real second (and always when `force`).
  func refresh(at virtual: Double, bridge: BeaconBridge, force: Bool = false) async {
    guard live else { return }
    let now = ContinuousClock.now
    let due = state.withLock { s -> Bool in
      if !force, let last = s.lastDraw, last.duration(to: now) < .milliseconds(100) { return false }
      s.lastDraw = now
      return true
    }
    guard due else { return }
    if state.withLock({ s -> Bool in
      defer { s.cleared = true }
      return !s.cleared
    }) {
      console.out("\u{1B}[2J")
    }
    let status = await bridge.status
    let recent = state.withLock { $0.recent }
    var screen = String(
      format: "beaconbridge demo: t = %6.1f s of %.0f s (%gx real time)\n\n", virtual, 170.0, speed)
    screen += Self.table(status)
    screen += "\nRECENT EVENTS\n"
    screen += recent.map { "  " + $0 }.joined(separator: "\n") + "\n"
    // Home the cursor and overwrite in place, clearing each line's tail and what is below, so the
    // table refreshes without flicker.
    screen = "\u{1B}[H" + screen.replacingOccurrences(of: "\n", with: "\u{1B}[K\n") + "\u{1B}[J"
    console.out(screen)
  }

  func finish(posted: [TaggedTripBatch]) {
    guard !json else { return }
    var out = live ? "\n" : "\n"
    out += "TAGGED BATCHES (handed to ScopeHost.postTripEventBatch)\n"
    out += "  TRIP  SEQ  DEVICE ID   RESOLUTION     EVENTS\n"
    for batch in posted {
      let types = batch.events.map(\.type).joined(separator: ", ")
      out +=
        "  \(batch.tripId.rawValue.padding(toLength: 4))  \(String(batch.sequence).padding(toLength: 3))  "
      out +=
        "\(batch.deviceId.rawValue.padding(toLength: 10))  \(batch.resolution.reason.padding(toLength: 13))  \(types)\n"
    }
    out +=
      "\n\(posted.count) batches posted, \(posted.reduce(0) { $0 + $1.events.count }) events, none lost.\n"
    console.out(out)
  }

  static func table(_ status: BridgeStatus) -> String {
    var out = "BEACONS IN RANGE\n"
    out +=
      "  KIND      UUID                                  MAJOR  MINOR  RSSI  SMOOTH  DIST    PROX       PAIRED\n"
    let pairings = PairingSet(status.pairings)
    for b in status.beaconsInRange {
      let identity = b.id.identity
      let paired = pairings.pairing(for: b.id).map { "\($0.deviceId)" } ?? "-"
      out += "  " + b.id.kind.padding(toLength: 8) + "  "
      out += (identity?.uuid.uuidString ?? "-").padding(toLength: 36) + "  "
      out += String(identity.map { Int($0.major) } ?? 0).padding(toLength: 5) + "  "
      out += String(identity.map { Int($0.minor) } ?? 0).padding(toLength: 5) + "  "
      out += (b.lastRSSI.map { String($0) } ?? "?").padding(toLength: 4) + "  "
      out += (b.smoothedRSSI.map { String(format: "%.1f", $0) } ?? "?").padding(toLength: 6) + "  "
      out += (b.distance.map { String(format: "%.1fm", $0) } ?? "?").padding(toLength: 6) + "  "
      out += b.proximity.rawValue.padding(toLength: 9) + "  " + paired + "\n"
    }
    if status.beaconsInRange.isEmpty { out += "  (none)\n" }
    if let active = status.active {
      out += "\nACTIVE BEACON: \(active.deviceId) (\(active.pairing.label ?? "no label")), \(active.id)\n"
    } else {
      out += "\nACTIVE BEACON: none\n"
    }
    out += "\nTRIPS\n"
    for trip in status.trips {
      out += "  \(trip.tripId): \(trip.resolution.deviceId ?? "no device ID yet") (\(trip.resolution.reason))"
      out += trip.endedAt == nil ? ", recording" : ", ended"
      out += trip.heldBatches > 0 ? ", \(trip.heldBatches) batch(es) held" : ""
      out += trip.waitingForEnd > 0 ? ", \(trip.waitingForEnd) batch(es) waiting for the trip's end\n" : "\n"
    }
    if status.trips.isEmpty { out += "  (none)\n" }
    return out
  }

  static func describe(_ timed: TimedBridgeEvent) -> String? {
    switch timed.event {
    case .beaconEntered(let b):
      return "beacon entered   \(b.id)  rssi \(b.lastRSSI.map(String.init) ?? "?")"
    case .beaconExited(let b, let reason):
      return "beacon exited    \(b.id)  (\(reason.rawValue))"
    case .activeBeaconChanged(let a):
      guard let a else { return "active beacon    none" }
      return "active beacon    \(a.deviceId) (\(a.pairing.label ?? "")) \(a.id)"
    case .tripStarted(let id):
      return "trip started     \(id)"
    case .tripTagged(let id, let r):
      return "trip tagged      \(id) -> \(r.deviceId ?? "unresolved") (\(r.reason))"
    case .batchHeld(let batch, let reason):
      return "batch held       \(batch.tripId) #\(batch.sequence), \(batch.events.count) events (\(reason))"
    case .batchPosted(let t):
      return "batch posted     \(t.tripId) #\(t.sequence) -> \(t.deviceId), \(t.events.count) events"
    case .batchPostFailed(let t, let error, let retry):
      return "post failed      \(t.tripId) #\(t.sequence): \(error); retry in \(retry) s"
    case .batchDeadLettered(let t, let reason):
      return "dead letter      \(t.tripId) #\(t.sequence): \(reason)"
    case .tripEnded(let id, let r):
      return "trip ended       \(id) \(r.isFinal ? "resolved" : "UNRESOLVED, batches held")"
    case .rejected(let address, let rejection):
      return "rejected         \(address?.description ?? "?"): \(rejection)"
    case .telemetry(let report):
      let t = report.telemetry
      let battery = t.batteryMillivolts.map { "\($0) mV" } ?? "battery ?"
      let temperature = t.temperature.map { String(format: "%.1f °C", $0) } ?? "? °C"
      return "telemetry        \(report.id.map { "\($0)" } ?? t.address.description): \(battery), "
        + "\(temperature), up \(Int(t.uptime)) s, \(t.advertisingCount) adverts"
    case .eddystoneURL(let address, let frame, _):
      return "eddystone URL    \(address): \(frame.url) (tx \(frame.txPower) dBm at 0 m)"
    case .beaconHealth(let change):
      return "beacon health    \(change.deviceId) \(change.kind.rawValue)"
        + (change.health.telemetry?.batteryMillivolts.map { " (\($0) mV)" } ?? "") + change.cloneDetail
    }
  }
}
