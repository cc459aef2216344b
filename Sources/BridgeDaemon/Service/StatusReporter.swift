import BeaconCore

/// `STATUS=` lines as the bridge's state changes, and freed memory handed back after many
/// beacons left at once (a flood expiring) or a long backlog drained, or the daemon would stay
/// at its peak size. It runs
/// as it starts (so an active unit's status is never empty) and when `changed` rings (a bridge
/// event, a change in scanning), at most once per `interval`: a change is told at once (systemd
/// shows what a unit waits for as it comes up), and the changes during the pause that follows
/// ring for one line after it.
struct StatusReporter: Service {
  let bridge: BeaconBridge
  let scan: ScanStatus
  let notifier: SystemdNotifier
  let changed: Doorbell
  var interval: Duration = .seconds(2)

  func run() async throws {
    var last = ""
    var release = PeakShrink()
    // A long backlog drained (days offline, then the uplink back) leaves the posts' and the
    // journal's churn in freed pages: handed back as it shrinks, down to a few batches.
    var drained = PeakShrink()
    drained.threshold = 256
    changed.ring()
    while true {
      await changed.wait()
      let current = await bridge.status
      let shrank = release.shouldRelease(tracked: current.beaconsInRange.count)
      if drained.shouldRelease(tracked: current.outboundBatches) || shrank {
        MallocTuning.returnFreedMemory()
      }
      let line = Self.line(current, scan: scan.condition)
      if line != last {
        notifier.notify("STATUS=\(line)")
        last = line
      }
      try await Task.sleep(for: interval)
    }
  }

  /// What scanning does, then (once the bridge runs) beacons, the active beacon and the backlog.
  static func line(_ status: BridgeStatus?, scan: ScanCondition) -> String {
    var parts = [scan.summary]
    guard let status else { return parts[0] }
    parts.append("\(status.beaconsInRange.count) beacon(s) in range")
    parts.append("active: \(status.active?.deviceId ?? "none")")
    let held = status.trips.reduce(0) { $0 + $1.heldBatches }
    parts.append("\(status.outboundBatches + held) batch(es) waiting")
    return parts.joined(separator: "; ")
  }
}
