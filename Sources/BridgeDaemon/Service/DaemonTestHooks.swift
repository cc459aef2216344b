#if canImport(Glibc)
  import Glibc
#endif

/// What the daemon's process tests reach into, read once from the environment. Each is off unless
/// its variable is set, so a daemon that users run never takes one.
struct DaemonTestHooks: Sendable {
  /// `BEACONBRIDGE_TEST_FLEET_KILL_MIDWAY=1`: a kill point inside the fleet's apply transaction
  /// (FleetDesiredTests): the store must hold the old document or the new one after a kill
  /// anywhere.
  let killMidwayFleetApply: Bool

  init(environment: [String: String]) {
    killMidwayFleetApply = environment["BEACONBRIDGE_TEST_FLEET_KILL_MIDWAY"] == "1"
  }

  /// `FleetDesired.midway`: called inside the apply transaction.
  func fleetApplyMidway() {
    if killMidwayFleetApply { raise(SIGKILL) }
  }
}
