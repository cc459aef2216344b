import BeaconCore
import FoundationEssentials

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
  /// What a stop may spend: waiting for the clean offline message's PUBACK (and the connection,
  /// when it is down), then for the DISCONNECT to be written. Within the daemon's stop budget
  /// (`ServiceGroup.stopBudget`).
  var stopBudget = (offline: 1.5, disconnect: 0.5)

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
    while let input = await inbox.next() {
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
        do throws(RetryablePostFailure) {
          try await client.publishOrThrow(topic: topics.reported, payload: reply, key: nil, retain: true)
        } catch {
          status.update { $0.lastProblem = error.description }
          logger.log(.warning, "fleet: the reported document was not sent: \(error.description)")
        }
      }
    }
    timer.cancel()
    lookOwed?.cancel()
    // Cancelled: the daemon stops. Say so, retained, before the DISCONNECT (which discards the
    // will), if the broker takes it within the stop's budget; else the will says it. Its own
    // task: this one is cancelled, which would abandon the publish at once.
    inbox.finish()
    let budget = stopBudget
    let offline = Task {
      await client.publish(
        topic: topics.status, payload: FleetPresence.offline(clean: true), key: nil, retain: true,
        timeout: budget.offline)
    }
    let outcome = await offline.value
    if outcome != .acknowledged {
      logger.log(
        .warning,
        "fleet: the clean offline message was not acknowledged within \(budget.offline) s (\(outcome)); the broker holds it if it took it, else its last will says the box went offline"
      )
    }
    await client.stopAndWait(seconds: budget.disconnect)
  }

  private func report(_ beacons: FleetBeaconReport?, due: Bool, client: MQTTClient) async {
    guard let beacons, let payload = await beacons.report(due: due) else { return }
    do throws(RetryablePostFailure) {
      try await client.publishOrThrow(topic: topics.beacons, payload: payload, key: nil, retain: true)
    } catch {
      beacons.forget()
      logger.log(.warning, "fleet: the beacon report was not sent: \(error.description)")
    }
  }
}
