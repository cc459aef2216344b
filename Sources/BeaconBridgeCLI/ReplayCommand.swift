import BeaconCore
import BridgeDaemon
import Foundation
import HCI
import HCIParsing
import Synchronization

/// `beaconbridge replay FILE`: a btmon capture through the real pipeline, in the capture's time.
public struct ReplayCommand: BridgeCommand {
  public static let name = "replay"
  public static let abstract = "Replay a btmon capture (btsnoop) through the pipeline in virtual time."
  public static let usage =
    "beaconbridge replay FILE [--json] [--adapter hciN] [--state-dir DIR] [--pair UUID[:MAJOR[:MINOR]]=DEVICE_ID]..."
  public static let discussion = """
    FILE is a btsnoop capture as 'btmon -w FILE' writes it (datalink 2001, the Linux monitor)
    or an HCI UART (H4) capture (datalink 1002); '-' reads stdin. Its LE advertising reports
    (legacy, and extended ones reassembled from their fragments) run through the real pipeline
    at their capture times, in seconds from the capture's first record.

    A monitor capture holds every controller on the host; only one is used: the one --adapter
    names, or else the first that reported advertisements.

    Prints the beacons found (identity, sightings, RSSI) and the enter, exit and active beacon
    events. With --json, prints one JSON object per line, as 'simulate' does. Malformed HCI
    events are skipped with a warning on stderr. A file that is not a btsnoop capture, is
    truncated, is larger than 32 MiB or has a record more than 1000000000 s
    after the first exits 1 with one error.

    OPTIONS:
      --json                     JSON lines, as 'simulate' prints them.
      --adapter hciN             Use this controller's events (a monitor capture).
      --pair UUID[:MAJOR[:MINOR]]=DEVICE_ID
                                 Pair a beacon for the replay (repeatable), so the active
                                 beacon is chosen as in a vehicle.
      --state-dir DIR            Also use the box's pairings from its store, those by key
                                 among them: Eddystone-EIDs and private addresses resolve as
                                 they would have at the capture's own time (its records'
                                 timestamps). Reads the store, changes nothing; reading keys
                                 needs the service user or root.
    """

  public var file: String
  public var json: Bool
  public var adapter: UInt16?
  public var pairings: [Pairing]
  /// Set when the box's store is to be read (`--state-dir`).
  public var stateDir: String?

  public init(_ arguments: inout Arguments) throws(UsageError) {
    json = arguments.flag("--json")
    adapter = try arguments.option("--adapter", as: HCIDeviceID.self)?.index
    stateDir = try arguments.option("--state-dir")
    pairings = []
    while let text = try arguments.option("--pair", repeatable: true) {
      pairings.append(try Self.pairing(text))
    }
    file = try arguments.positional("capture FILE")
  }

  static func pairing(_ text: String) throws(UsageError) -> Pairing {
    let halves = text.split(separator: "=", maxSplits: 1).map(String.init)
    let parts = halves.first?.split(separator: ":", omittingEmptySubsequences: false).map(String.init) ?? []
    guard halves.count == 2, (1...3).contains(parts.count) else {
      throw UsageError("--pair must be UUID[:MAJOR[:MINOR]]=DEVICE_ID, not \(text.quotedForMessage)")
    }
    do {
      let identity = try PairingIdentity(
        uuid: parts[0], major: parts.count > 1 ? parts[1] : nil, minor: parts.count > 2 ? parts[2] : nil)
      return Pairing(identity: identity, deviceId: try DeviceID(halves[1]))
    } catch {
      throw UsageError("--pair: \(error.description)")
    }
  }

  public func run(_ console: any Console) async -> Int32 {
    let replay: CaptureReplay
    do {
      // The header first: what is not a capture (/dev/zero, a text file) is refused at once.
      let input = try InputReader(path: file)
      var bytes = try input.read(upTo: BTSnoopCapture.headerLength)
      _ = try BTSnoopCapture.header(bytes)
      bytes += try input.readToEnd(limit: InputLimits.capture)
      replay = try CaptureReplay(bytes: bytes, controller: adapter)
    } catch let error as InputError {
      console.err("beaconbridge: replay: \(error.description)\n")
      return ExitStatus.failure
    } catch {
      console.err("beaconbridge: replay \(file): \(error)\n")
      return ExitStatus.failure
    }
    let reports = replay.reports
    if let adapter, reports.reports.isEmpty, !reports.scanningControllers.isEmpty {
      let others = reports.scanningControllers.map { "hci\($0)" }.joined(separator: ", ")
      console.err("beaconbridge: replay \(file): hci\(adapter) reported no advertisements; \(others) did\n")
      return ExitStatus.failure
    }
    for problem in reports.malformed.prefix(10) {
      console.err(
        "beaconbridge: replay: record \(problem.record + 1): skipped a malformed HCI event: \(problem.error)\n"
      )
    }
    if reports.malformed.count > 10 {
      console.err("beaconbridge: replay: \(reports.malformed.count - 10) more malformed HCI events skipped\n")
    }

    var pairings = self.pairings
    var authenticator: KeyAuthenticator?
    if let stateDir {
      switch await Self.boxPairings(stateDir, epoch: reports.start.map(Self.unixSeconds)) {
      case .success(let box):
        pairings = box.pairings + pairings
        authenticator = box.authenticator
      case .failure(let failure):
        console.err("beaconbridge: replay: \(failure.description)\n")
        return ExitStatus.failure
      }
    }
    let scenario = replay.scenario(pairings: pairings)
    let view = ReplayView(json: json, console: console)
    do {
      try await ScenarioRunner(scenario: scenario, authenticator: authenticator).run(
        emit: { view.record($0) }, report: { view.note($0) })
    } catch {
      console.err("beaconbridge: replay \(file): \(error)\n")
      return ExitStatus.failure
    }
    if !json { console.out(Self.summary(replay: replay, scenario: scenario, events: view.lines)) }
    return ExitStatus.success
  }

  /// The store's pairings, and an authenticator for those by key whose box clock is the
  /// capture's: `epoch` is the first record's time in seconds since 1970 (a pairing's clock
  /// offset is from the box's clock). Nothing is created or written.
  static func boxPairings(_ directory: String, epoch: Int64?) async -> Result<
    (pairings: [Pairing], authenticator: KeyAuthenticator?), ReplayStoreFailure
  > {
    do throws(StateDirectoryError) {
      try StateDirectory.requireExisting(directory, store: true)
    } catch {
      return .failure(ReplayStoreFailure(error.description))
    }
    do throws(StoreError) {
      let store = try Store(readingOnly: directory)
      let pairings = try await store.pairings()
      guard pairings.contains(where: { $0.key != nil }) else { return .success((pairings, nil)) }
      var keyed = try await store.keyAuthenticator(
        eidClockTolerance: BridgeConfiguration().eidClockTolerance, epoch: epoch ?? 0)
      keyed.countSearchesByRecord()
      return .success((pairings, keyed.isEmpty ? nil : keyed))
    } catch {
      return .failure(ReplayStoreFailure(error.description))
    }
  }

  struct ReplayStoreFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
  }

  /// btsnoop's microseconds since 0 AD as whole seconds since 1970 (0 before 1970).
  static func unixSeconds(_ timestamp: UInt64) -> Int64 {
    let offset = BTSnoopCapture.Record.unixEpochOffset
    return timestamp > offset ? Int64(clamping: (timestamp - offset) / 1_000_000) : 0
  }

  /// The readable report: the capture, the beacons found, the events.
  static func summary(replay: CaptureReplay, scenario: Scenario, events: [String]) -> String {
    let reports = replay.reports
    var out = "CAPTURE\n"
    out += "  datalink \(replay.capture.datalink), \(replay.capture.records.count) records, "
    out += String(format: "%.1f s", replay.duration)
    if let controller = reports.controller { out += ", controller hci\(controller)" }
    out += "\n  \(reports.reports.count) advertisements"
    if reports.directedReports > 0 { out += ", \(reports.directedReports) directed reports ignored" }
    if !reports.malformed.isEmpty { out += ", \(reports.malformed.count) malformed events skipped" }
    if reports.unfinishedFragments > 0 {
      out += ", \(reports.unfinishedFragments) unfinished extended fragments"
    }
    out += "\n\n"

    struct Found {
      var sightings = 0
      var rssi: [Int] = []
      var first: Double
      var last: Double
    }
    var found: [BeaconID: Found] = [:]
    for entry in scenario.entries {
      guard case .advertisement(let address, let rssi, .raw(let bytes)) = entry.action,
        case .success(let ad) = Advertisement.parse(address: address, rssi: rssi, adStructures: bytes)
      else { continue }
      for frame in BeaconFrameParser.parse(ad).frames {
        guard let id = frame.beaconID else { continue }
        found[id, default: Found(first: entry.at, last: entry.at)].sightings += 1
        found[id]?.last = entry.at
        if let rssi { found[id]?.rssi.append(rssi) }
      }
    }
    out += "BEACONS FOUND\n"
    out +=
      "  KIND      UUID                                  MAJOR  MINOR  SIGHTINGS  RSSI    FIRST     LAST\n"
    for (id, f) in found.sorted(by: { $0.key < $1.key }) {
      let identity = id.identity
      out += "  " + id.kind.padding(toLength: 8) + "  "
      out += (identity?.uuid.uuidString ?? id.description).padding(toLength: 36) + "  "
      out += (identity.map { String($0.major) } ?? "-").padding(toLength: 5) + "  "
      out += (identity.map { String($0.minor) } ?? "-").padding(toLength: 5) + "  "
      out += String(f.sightings).padding(toLength: 9) + "  "
      let mean =
        f.rssi.isEmpty ? "?" : String(format: "%.0f", Double(f.rssi.reduce(0, +)) / Double(f.rssi.count))
      out += mean.padding(toLength: 6) + "  "
      out += String(format: "%6.1fs  %6.1fs", f.first, f.last) + "\n"
    }
    if found.isEmpty { out += "  (none)\n" }
    out += "\nEVENTS\n"
    out += events.isEmpty ? "  (none)\n" : events.map { "  " + $0 + "\n" }.joined()
    return out
  }
}

/// Collects replay output: JSON lines straight to stdout, or readable lines for the summary.
final class ReplayView: Sendable {
  let json: Bool
  let console: any Console
  private let state = Mutex<[String]>([])

  init(json: Bool, console: any Console) {
    self.json = json
    self.console = console
  }

  var lines: [String] { state.withLock { $0 } }

  func record(_ event: TimedBridgeEvent) {
    if json {
      console.out(event.jsonLine + "\n")
    } else if let line = DemoView.describe(event) {
      state.withLock { $0.append(String(format: "%7.1fs  ", event.at.seconds) + line) }
    }
  }

  func note(_ line: ScenarioLine) {
    if json { console.out(line.jsonLine + "\n") } else { state.withLock { $0.append(line.jsonLine) } }
  }
}
