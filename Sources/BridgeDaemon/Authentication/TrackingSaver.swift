import BeaconCore
import BeaconCrypto

/// Writes each EID pairing's tracking (its clock offset and newest heard window) to the store as
/// it changes, looked at every `interval`, and not only at exit: a daemon killed without its
/// exit (kill -9, the watchdog, power loss) restarts at most `interval` behind the beacons, so
/// their clocks are not searched for again, and an EID replayed from a window heard before the
/// last save stays refused. A steady beacon changes its tracking once a window (2^K s), so most
/// looks write nothing.
struct TrackingSaver: Service {
  let bridge: BeaconBridge
  let store: Store
  let logger: DaemonLogger
  var interval: Duration = .seconds(30)

  func run() async throws {
    var saved = await current() ?? [:]
    while true {
      try await Task.sleep(for: interval)
      saved = await save(changedSince: saved)
    }
  }

  /// Writes the pairings whose tracking is not `saved`'s; returns what the store now holds. A
  /// failed write is logged and tried again at the next look.
  func save(changedSince saved: [Int64: EIDResolver.Tracking]) async -> [Int64: EIDResolver.Tracking] {
    guard let now = await current() else { return saved }
    var written = saved
    for (id, tracking) in now.sorted(by: { $0.key < $1.key }) where saved[id] != tracking {
      do throws(StoreError) {
        try await store.saveTracking(
          pairing: id, clockOffset: tracking.clockOffset, heardWindow: tracking.heardWindow)
        written[id] = tracking
      } catch {
        logger.log(.warning, "cannot keep the EID beacons' clocks, trying again later: \(error.description)")
        break
      }
    }
    return written
  }

  private func current() async -> [Int64: EIDResolver.Tracking]? {
    (await bridge.authenticator as? KeyAuthenticator)?.tracking
  }
}
