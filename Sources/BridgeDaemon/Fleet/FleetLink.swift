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
  public var lastProblem: String?

  public init(broker: String, boxId: String) {
    self.broker = broker
    self.boxId = boxId
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

/// The daemon's connection to the fleet's broker (`[Fleet]`, docs/fleet.md): its own MQTT client,
/// with a last will that says the box vanished, a retained birth message on every connect, the
/// desired document's topic subscribed, and a clean offline message when the daemon stops.
///
/// The messages that arrive are handed to `desired`, one at a time, in order, on this service's
/// task; its answer (if any) is published to the reported topic.
struct FleetLink: Service {
  let settings: MQTTSettings
  let topics: FleetTopics
  /// The program's version, for the birth message.
  let version: String
  let status: FleetLinkStatus
  let logger: DaemonLogger
  /// Handles one message on the desired topic; returns the reported document, or nil for none.
  var desired: @Sendable (MQTTIncoming) async -> [UInt8]? = { _ in nil }

  func run() async throws {
    let since = Date.now.formatted(.iso8601)
    // The newest documents win: a backlog of older ones would only be refused as stale.
    let (messages, inbox) = AsyncStream<MQTTIncoming>.makeStream(bufferingPolicy: .bufferingNewest(16))
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
      onMessage: { inbox.yield($0) })
    let client: MQTTClient
    do { client = try MQTTClient(settings, session: session) } catch {
      status.update { $0.lastProblem = error.description }
      logger.log(.error, "fleet: \(error.description); the fleet link is off")
      // The rest of the daemon runs on without the fleet link.
      while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
      return
    }
    for await message in messages where message.topic == topics.desired {
      if let reply = await desired(message) {
        do { try await client.publish(topic: topics.reported, payload: reply, key: nil) } catch {
          status.update { $0.lastProblem = error.description }
          logger.log(.warning, "fleet: the reported document was not sent: \(error.description)")
        }
      }
    }
    // Cancelled: the daemon stops. Say so, retained, before the DISCONNECT (which discards the
    // will). Its own task: this one is cancelled, and the publish must still wait for its PUBACK.
    inbox.finish()
    let offline = Task {
      try? await client.publish(
        topic: topics.status, payload: FleetPresence.offline(clean: true), key: nil, retain: true)
    }
    await offline.value
    await client.stopAndWait()
  }
}
