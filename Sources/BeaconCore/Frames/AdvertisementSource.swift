/// Where advertisements come from: BlueZ over D-Bus, raw HCI, a btsnoop replay, the demo's
/// simulated radio, or a test's MockAdapter.
public protocol AdvertisementSource: Sendable {
  /// Human name of the backend, e.g. "bluez (active discovery)".
  var description: String { get }
  /// Starts receiving; the stream ends (or throws) when the source stops. Cancelling the consumer stops scanning.
  func events() async throws -> AsyncThrowingStream<SourceEvent, any Error>
  /// Returns once a stopped source has put the radio back (StopDiscovery, scan disabled). A
  /// process about to exit awaits it, or the cleanup would die with it.
  func finished() async
}

extension AdvertisementSource {
  public func finished() async {}
}
