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
