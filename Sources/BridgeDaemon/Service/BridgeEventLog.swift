import BeaconCore

/// The journal lines for the bridge's events: what an operator reads in `journalctl -u
/// beaconbridge` about beacons, trips and refused batches. Events not listed here are not logged
/// (they reach D-Bus subscribers only).
enum BridgeEventLog {
  static func log(_ event: BridgeEvent, to logger: DaemonLogger) {
    switch event {
    case .activeBeaconChanged(let active):
      logger.log(.notice, "active beacon: \(active.map { "\($0.deviceId) (\($0.id))" } ?? "none")")
    case .tripTagged(let tripId, let resolution):
      logger.log(
        .notice,
        "trip \(tripId) tagged \(resolution.deviceId ?? "unresolved") (\(resolution.reason)"
          + (resolution.snapshot.map { ", authentication \($0.id.authentication.rawValue)" } ?? "") + ")")
    case .batchDeadLettered(let batch, let reason):
      logger.log(.error, "trip \(batch.tripId) batch \(batch.sequence) refused by the backend: \(reason)")
    case .beaconEntered(let beacon):
      logger.log(.debug, "beacon entered: \(beacon.id) at \(beacon.address)")
    case .beaconHealth(let change):
      let battery = change.health.telemetry?.batteryMillivolts.map { ", battery \($0) mV" } ?? ""
      let level: LogRecord.Level =
        [.batteryRecovered, .seenAgain, .cloneCleared].contains(change.kind) ? .notice : .warning
      logger.log(
        level,
        "paired beacon \(change.deviceId) (\(change.id)): \(change.kind.rawValue)\(battery)\(change.cloneDetail)"
      )
    default:
      break
    }
  }
}
