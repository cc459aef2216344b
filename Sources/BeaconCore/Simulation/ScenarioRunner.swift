import Synchronization

/// The host `simulate`, `replay` and `demo` run the bridge with: beacon mode (its hook takes the
/// snapshot), an upload layer that accepts every batch and remembers it, and logs kept in memory.
public final class SimulationHost: ScopeHost {
  public let configuration: BridgeConfiguration
  private let state = Mutex<(posted: [TaggedTripBatch], logs: [LogRecord])>(([], []))

  public init(configuration: BridgeConfiguration) {
    self.configuration = configuration
  }

  public var posted: [TaggedTripBatch] { state.withLock { $0.posted } }
  public var logs: [LogRecord] { state.withLock { $0.logs } }

  public func log(_ record: LogRecord) { state.withLock { $0.logs.append(record) } }

  public func onBeaconTripStart(_ trip: BeaconTripStart) async {
    await trip.snapshotActiveBeacon()
  }

  public func postTripEventBatch(_ batch: TaggedTripBatch) async throws {
    state.withLock { $0.posted.append(batch) }
  }
}

/// Plays a scenario through the real `BeaconBridge` on a `VirtualClock`.
///
/// Between entries it runs every deadline that falls due (exits, the active hold, late windows)
/// at its own time, so the output is the same on every run.
public struct ScenarioRunner: Sendable {
  public let scenario: Scenario
  /// Resolves the scenario's pairings by key (built by the caller, which may do cryptography).
  public let authenticator: (any BeaconAuthenticator)?

  public init(scenario: Scenario, authenticator: (any BeaconAuthenticator)? = nil) {
    self.scenario = scenario
    self.authenticator = authenticator
  }

  /// Runs the scenario and returns the host (what was posted). `emit` gets every output line's
  /// event in order; `pace` is awaited before each step with its virtual time, so the demo can play
  /// in compressed real time (simulate passes nothing and runs flat out).
  @discardableResult
  public func run(
    host: SimulationHost? = nil,
    emit: @escaping @Sendable (TimedBridgeEvent) -> Void,
    report: @escaping @Sendable (ScenarioLine) -> Void = { _ in },
    pace: (@Sendable (Double, BeaconBridge) async -> Void)? = nil
  ) async throws -> SimulationHost {
    let clock = VirtualClock()
    let host = host ?? SimulationHost(configuration: scenario.configuration)
    let bridge = BeaconBridge(host: host, clock: clock, observer: emit)
    await bridge.setPairings(scenario.pairings)
    await bridge.setAuthenticator(authenticator)
    try await bridge.start()

    for entry in scenario.entries {
      await runDeadlines(until: entry.at, clock: clock, bridge: bridge, pace: pace)
      await pace?(entry.at, bridge)
      clock.set(seconds: entry.at)
      await perform(entry, bridge: bridge, report: report)
    }
    await runDeadlines(until: scenario.end, clock: clock, bridge: bridge, pace: pace)
    await pace?(scenario.end, bridge)
    return host
  }

  private func runDeadlines(
    until end: Double, clock: VirtualClock, bridge: BeaconBridge,
    pace: (@Sendable (Double, BeaconBridge) async -> Void)?
  ) async {
    // Bounded, so a deadline that never clears cannot hang a run.
    for _ in 0..<1_000_000 {
      guard let due = await bridge.nextDeadline, due.seconds <= end else { return }
      await pace?(due.seconds, bridge)
      // A nanosecond past the deadline, so the float round trip through the clock lands on or
      // after it; output rounds to microseconds.
      clock.set(seconds: max(due.seconds, clock.now.offset.seconds) + 1e-9)
      await bridge.tick()
    }
  }

  private func perform(
    _ entry: Scenario.Entry, bridge: BeaconBridge, report: @Sendable (ScenarioLine) -> Void
  ) async {
    do {
      switch entry.action {
      case .advertisement(let address, let rssi, let payload):
        switch payload {
        case .raw(let bytes):
          for event in Advertisement.sourceEvents(address: address, rssi: rssi, adStructures: bytes) {
            await bridge.ingest(event)
          }
        case .structured(let manufacturer, let service, let txPower):
          let ad = Advertisement(
            address: address, rssi: rssi, txPower: txPower, manufacturerData: manufacturer,
            serviceData: service)
          await bridge.ingest(.sighting(ad))
        }
      case .lost(let address):
        await bridge.ingest(.lost(address))
      case .tripStart(let tripId):
        try await bridge.tripStart(tripId)
      case .tripEvents(let tripId, let events):
        try await bridge.tripEvents(tripId, events: events)
      case .tripEnd(let tripId):
        try await bridge.tripEnd(tripId)
      case .tripAssign(let tripId, let deviceId):
        try await bridge.assign(tripId, deviceId: deviceId)
      case .pair(let pairing):
        var pairings = PairingSet(await bridge.status.pairings)
        pairings.upsert(pairing)
        await bridge.setPairings(pairings.pairings)
      case .unpair(let deviceId):
        var pairings = PairingSet(await bridge.status.pairings)
        pairings.remove(deviceId: deviceId)
        await bridge.setPairings(pairings.pairings)
      case .refused(let path, let error):
        report(
          ScenarioLine(
            at: entry.at, type: "rejected",
            fields: [("reason", .string("invalidIdentifier")), ("detail", .string("\(path): \(error)"))]))
      }
    } catch {
      report(
        ScenarioLine(
          at: entry.at, type: "rejected",
          fields: [
            ("reason", .string("tripCall")), ("detail", .string(error.description)),
          ]))
    }
  }
}

/// An output line that is not a bridge event (a refused trip call in a scenario).
public struct ScenarioLine: Sendable {
  public var at: Double
  public var type: String
  public var fields: [(key: String, value: JSONValue)]

  public var jsonLine: String {
    var out = ""
    JSONWriter.writeObject([("at", .double(at)), ("type", .string(type))] + fields, to: &out)
    return out
  }
}
