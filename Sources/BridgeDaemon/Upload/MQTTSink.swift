import BeaconCore
import Synchronization

/// The MQTT sink (`UploadSink`): publishes each batch to the configured topic
/// (`fleet/{deviceId}/trips`), QoS 1, with `Idempotency-Key` as an MQTT 5 user property and
/// `idempotencyKey` in the payload (`UploadPayload.mqttBody`). The sink owns its one
/// `MQTTClient`, made on the first post (a daemon without trips opens no connection) and
/// stopped with the sink. A stopped sink abandons the publish in flight (its batch stays in the
/// outbox) and opens no new connection.
public final class MQTTSink: UploadSink {
  public let settings: MQTTSettings
  private let client = Mutex<(client: MQTTClient?, stopped: Bool)>((nil, false))

  public init(_ settings: MQTTSettings) { self.settings = settings }

  deinit { stop() }

  private func connectedClient() throws(RetryablePostFailure) -> MQTTClient {
    try client.withLock { (state) throws(RetryablePostFailure) -> MQTTClient in
      if let client = state.client { return client }
      guard !state.stopped else {
        throw RetryablePostFailure("not sent: the daemon is stopping; the batch stays in the outbox")
      }
      let made = try MQTTClient(settings)
      state.client = made
      return made
    }
  }

  public func post(_ batch: TaggedTripBatch) async throws {
    let payload = try UploadPayload(batch)
    let level: MQTTTopicLevel
    do { level = try MQTTTopicLevel(batch.deviceId) } catch {
      throw PermanentPostFailure("not sent: \(error)")
    }
    let topic = settings.topic(for: level)
    try await connectedClient().publishOrThrow(
      topic: topic, payload: payload.mqttBody, key: payload.idempotencyKey)
  }

  public func stop() {
    let stopped = client.withLock { state in
      defer { state = (nil, true) }
      return state.client
    }
    stopped?.stop()
  }
}
