import BeaconCore
import FoundationEssentials
import Synchronization

/// The fleet topics of one box, `{boxId}` filled in (`[Fleet]`, docs/fleet.md).
public struct FleetTopics: Hashable, Sendable {
  public var status: String
  public var desired: String
  public var reported: String
  public var beacons: String

  public init(_ options: FleetOptions, boxId: String) {
    status = FleetOptions.topic(options.statusTopic, boxId: boxId)
    desired = FleetOptions.topic(options.desiredTopic, boxId: boxId)
    reported = FleetOptions.topic(options.reportedTopic, boxId: boxId)
    beacons = FleetOptions.topic(options.beaconsTopic, boxId: boxId)
  }
}

/// What the fleet link knows, for `status` and `doctor` (through `DaemonStatus`).
public struct FleetLinkState: Hashable, Sendable {
  public var broker: String
  public var boxId: String
  public var connected = false
  /// The version of the last desired document that arrived, whatever became of it.
  public var lastDesiredVersion: Int64?
  /// The version applied (the store's, surviving restarts).
  public var appliedVersion: Int64?
  /// The applied document's settings, over the configuration file's.
  public var appliedSettings: [FleetSetting] = []
  public var lastProblem: String?

  public init(broker: String, boxId: String) {
    self.broker = broker
    self.boxId = boxId
  }
}

extension FleetLinkState {
  /// The `fleet` object of the daemon's `Status` (docs/dbus-api.md; `DaemonStatus.Fleet` reads
  /// it).
  var json: JSONValue {
    .object([
      "broker": .string(broker), "boxId": .string(boxId), "connected": .bool(connected),
      "lastDesiredVersion": lastDesiredVersion.map { .int($0) } ?? .null,
      "appliedVersion": appliedVersion.map { .int($0) } ?? .null,
      "appliedSettings": .object(
        Dictionary(grouping: appliedSettings, by: \.section).mapValues { settings in
          .object(Dictionary(settings.map { ($0.key, JSONValue.string($0.value)) }) { $1 })
        }),
      "lastProblem": lastProblem.map { .string($0) } ?? .null,
    ])
  }
}

/// The fleet link's shared state: written by `FleetLink`, read by the D-Bus `Status`.
final class FleetLinkStatus: Sendable {
  private let state: Mutex<FleetLinkState>
  init(_ initial: FleetLinkState) { state = Mutex(initial) }
  var current: FleetLinkState { state.withLock { $0 } }
  func update(_ change: (inout FleetLinkState) -> Void) { state.withLock { change(&$0) } }
}

/// The presence documents on the status topic (docs/fleet.md "Presence").
enum FleetPresence {
  static func online(version: String, configVersion: Int64?, since: String) -> [UInt8] {
    let fields: [String: JSONValue] = [
      "state": .string("online"), "version": .string(version),
      "configVersion": configVersion.map { .int($0) } ?? .null, "since": .string(since),
    ]
    return Array(JSONValue.object(fields).compactText.utf8)
  }

  static func offline(clean: Bool) -> [UInt8] {
    Array(JSONValue.object(["state": .string("offline"), "clean": .bool(clean)]).compactText.utf8)
  }
}

/// What the fleet link acts on, in order: a message from the broker, or a bridge event that may
/// let a pending document apply (a trip ended).
enum FleetInput: Sendable {
  case message(MQTTIncoming)
  case tripEnded
  /// A paired beacon's sighting, telemetry or health changed: the beacon report may have news.
  case beaconsChanged
  /// `[Fleet] ReportInterval` passed: the beacon report goes out even without news.
  case reportDue
}

/// The fleet link's queue, made before the bridge so that the bridge's events reach it.
final class FleetInbox: Sendable {
  let stream: AsyncStream<FleetInput>
  let continuation: AsyncStream<FleetInput>.Continuation
  init() {
    // The newest inputs win: a backlog of older documents would only be refused as stale.
    (stream, continuation) = AsyncStream<FleetInput>.makeStream(bufferingPolicy: .bufferingNewest(16))
  }
  func yield(_ input: FleetInput) { continuation.yield(input) }
}

/// The daemon's connection to the fleet's broker (`[Fleet]`, docs/fleet.md): its own MQTT client,
/// with a last will that says the box vanished, a retained birth message on every connect, the
/// desired document's topic subscribed, and a clean offline message when the daemon stops.
///
/// The messages that arrive, and the trips' ends, are handed to `desired` one at a time, in
/// order, on this service's task; its answer (if any) is published, retained, to the reported
/// topic.
struct FleetLink: Service {
  let settings: MQTTSettings
  let topics: FleetTopics
  /// The program's version, for the birth message.
  let version: String
  let status: FleetLinkStatus
  let logger: DaemonLogger
  let inbox: FleetInbox
  /// Handles one desired document or trip end; returns the reported document, or nil for none.
  var desired: @Sendable (FleetInput) async -> [UInt8]? = { _ in nil }
  /// The beacon report, or nil when there is nothing new (`FleetBeaconReport`).
  var beacons: FleetBeaconReport?
  var reportInterval: Duration = .seconds(900)

  func run() async throws {
    let since = Date.now.formatted(.iso8601)
    let inbox = self.inbox
    let status = self.status
    let topics = self.topics
    let version = self.version
    let logger = self.logger
    let session = MQTTClient.Session(
      will: (topics.status, FleetPresence.offline(clean: false)), subscriptions: [topics.desired],
      onConnect: { client in
        let applied = status.current.appliedVersion
        status.update {
          $0.connected = true
          $0.lastProblem = nil
        }
        client.send(
          topic: topics.status,
          payload: FleetPresence.online(version: version, configVersion: applied, since: since), retain: true)
        logger.log(.info, "fleet: connected to \(status.current.broker) as box \(status.current.boxId)")
      },
      onMessage: { inbox.yield(.message($0)) },
      onDisconnect: { reason in
        status.update {
          $0.connected = false
          $0.lastProblem = reason
        }
      },
      // Twice the largest document handed on: a bigger one is refused with a reason, a far
      // bigger one never sent by the broker.
      maximumPacketSize: UInt32(2 * MQTTClient.maxIncomingBytes))
    let client: MQTTClient
    do { client = try MQTTClient(settings, session: session) } catch {
      status.update { $0.lastProblem = error.description }
      logger.log(.error, "fleet: \(error.description); the fleet link is off")
      // The rest of the daemon runs on without the fleet link.
      while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
      return
    }
    let interval = reportInterval
    let timer = Task {
      inbox.yield(.reportDue)
      while !Task.isCancelled {
        try? await Task.sleep(for: interval)
        inbox.yield(.reportDue)
      }
    }
    defer { timer.cancel() }
    // Telemetry can come many times a second: the report is built at most once a second, and a
    // change inside that second is looked at when it is over.
    var lastLook = ContinuousClock.now - .seconds(1)
    var lookOwed: Task<Void, Never>?
    for await input in inbox.stream {
      switch input {
      case .reportDue:
        lastLook = ContinuousClock.now
        await report(beacons, due: true, client: client)
        continue
      case .beaconsChanged:
        let wait = lastLook + .seconds(1) - ContinuousClock.now
        guard wait <= .milliseconds(20) else {
          if lookOwed == nil {
            lookOwed = Task {
              try? await Task.sleep(for: wait)
              inbox.yield(.beaconsChanged)
            }
          }
          continue
        }
        lookOwed = nil
        lastLook = ContinuousClock.now
        await report(beacons, due: false, client: client)
        continue
      case .message(let message) where message.topic != topics.desired: continue
      default: break
      }
      if let reply = await desired(input) {
        do { try await client.publish(topic: topics.reported, payload: reply, key: nil, retain: true) } catch
        {
          status.update { $0.lastProblem = error.description }
          logger.log(.warning, "fleet: the reported document was not sent: \(error.description)")
        }
      }
    }
    timer.cancel()
    lookOwed?.cancel()
    // Cancelled: the daemon stops. Say so, retained, before the DISCONNECT (which discards the
    // will). Its own task: this one is cancelled, and the publish must still wait for its PUBACK.
    inbox.continuation.finish()
    let offline = Task {
      try? await client.publish(
        topic: topics.status, payload: FleetPresence.offline(clean: true), key: nil, retain: true)
    }
    await offline.value
    await client.stopAndWait()
  }

  private func report(_ beacons: FleetBeaconReport?, due: Bool, client: MQTTClient) async {
    guard let beacons, let payload = await beacons.report(due: due) else { return }
    do { try await client.publish(topic: topics.beacons, payload: payload, key: nil, retain: true) } catch {
      beacons.forget()
      logger.log(.warning, "fleet: the beacon report was not sent: \(error.description)")
    }
  }
}
