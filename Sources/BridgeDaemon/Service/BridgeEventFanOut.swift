import BeaconCore

/// Where each bridge event goes (`BeaconBridge`'s observer, called in order on the bridge's
/// executor): its journal line, the `STATUS=` doorbell, the addresses of paired beacons (which
/// BlueZ pruning keeps), the D-Bus signals, the G-Zone poller after an upload, and the fleet
/// link's inbox (a trip's end may let a pending document apply; a beacon's news goes into the
/// beacon report).
struct BridgeEventFanOut: Sendable {
  let logger: DaemonLogger
  let statusChanged: Doorbell
  let paired: PairedBeacons
  let announcements: Announcements
  let gzone: GZonePoller
  let fleetInbox: FleetInbox

  func deliver(_ event: TimedBridgeEvent) {
    BridgeEventLog.log(event.event, to: logger)
    statusChanged.ring()
    if case .beaconEntered(let beacon) = event.event { paired.entered(beacon) }
    if BridgeService.announces(event.event) { announcements.yield(.bridge(event.event)) }
    if case .batchPosted = event.event { gzone.tripUploaded() }
    switch event.event {
    case .tripEnded: fleetInbox.yield(.tripEnded)
    case .beaconEntered, .beaconExited, .telemetry, .beaconHealth: fleetInbox.yield(.beaconsChanged)
    default: break
    }
  }
}
