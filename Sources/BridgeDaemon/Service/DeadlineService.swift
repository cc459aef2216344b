import BeaconCore

/// Trip deadlines (late window, hold, post retries) on their own task, whether or not a source
/// scans.
struct DeadlineService: Service {
  let bridge: BeaconBridge
  func run() async throws { try await bridge.runDeadlines() }
}
