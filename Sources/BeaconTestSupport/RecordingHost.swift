import BeaconCore
import Synchronization

/// A `ScopeHost` for tests: records what was posted and logged, can fail posts on demand, and
/// runs in beacon mode (its hook snapshots) or smart mode (the protocol's default hook).
public final class RecordingHost: ScopeHost {
  public struct PostFailure: Error, CustomStringConvertible {
    public var description: String { "backend unavailable (injected)" }
  }

  private struct State {
    var configuration: BridgeConfiguration
    var posted: [TaggedTripBatch] = []
    var attempts = 0
    var failNext = 0
    var logs: [LogRecord] = []
    var snapshots: [BeaconSnapshot?] = []
  }

  private let state: Mutex<State>
  public let beaconMode: Bool

  public init(configuration: BridgeConfiguration = BridgeConfiguration(), beaconMode: Bool = true) {
    state = Mutex(State(configuration: configuration))
    self.beaconMode = beaconMode
  }

  public var configuration: BridgeConfiguration {
    get { state.withLock { $0.configuration } }
  }

  public func setConfiguration(_ configuration: BridgeConfiguration) {
    state.withLock { $0.configuration = configuration }
  }

  /// The next `count` posts throw.
  public func failPosts(_ count: Int) { state.withLock { $0.failNext = count } }

  public var posted: [TaggedTripBatch] { state.withLock { $0.posted } }
  public var postAttempts: Int { state.withLock { $0.attempts } }
  public var logs: [LogRecord] { state.withLock { $0.logs } }
  /// What each trip-start snapshot returned.
  public var snapshots: [BeaconSnapshot?] { state.withLock { $0.snapshots } }

  public func log(_ record: LogRecord) { state.withLock { $0.logs.append(record) } }

  public func onBeaconTripStart(_ trip: BeaconTripStart) async {
    guard beaconMode else { return }
    let snapshot = await trip.snapshotActiveBeacon()
    state.withLock { $0.snapshots.append(snapshot) }
  }

  public func postTripEventBatch(_ batch: TaggedTripBatch) async throws {
    try state.withLock { s in
      s.attempts += 1
      if s.failNext > 0 {
        s.failNext -= 1
        throw PostFailure()
      }
      s.posted.append(batch)
    }
  }
}

/// Collects bridge events, for assertions.
public final class EventLog: Sendable {
  private let state = Mutex<[TimedBridgeEvent]>([])

  public init() {}

  public var observer: @Sendable (TimedBridgeEvent) -> Void {
    { event in self.state.withLock { $0.append(event) } }
  }

  public var events: [TimedBridgeEvent] { state.withLock { $0 } }

  public func types() -> [String] { events.map(\.event.type) }

  public func count(_ type: String) -> Int { events.filter { $0.event.type == type }.count }
}
