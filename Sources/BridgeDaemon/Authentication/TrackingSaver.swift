import BeaconCore
import BeaconCrypto

/// Writes each EID pairing's tracking (its clock offset and newest heard window) to the store as
/// it changes, looked at every `interval`, and not only at exit: a daemon killed without its
/// exit (kill -9, the watchdog, power loss) restarts at most `interval` behind the beacons, so
/// their clocks are not searched for again, and an EID replayed from a window heard before the
/// last save stays refused. A steady beacon changes its tracking once a window (2^K s), so most
/// looks write nothing. The writing is `PairingBook.saveTracking`, the tracking's one writer.
struct TrackingSaver: Service {
  let book: PairingBook
  let logger: DaemonLogger
  var interval: Duration = .seconds(30)

  func run() async throws {
    while true {
      try await Task.sleep(for: interval)
      do throws(StoreError) { try await book.saveTracking() } catch {
        logger.log(.warning, "cannot keep the EID beacons' clocks, trying again later: \(error.description)")
      }
    }
  }
}
