import BeaconCore

/// What the daemon's figures mean for the box: the one place that judges them, for `doctor`'s
/// checks and `status`'s marks alike. A paired beacon's battery, silence and clone verdicts are
/// `BeaconHealth`'s, made in the daemon with its `[Health]` settings and carried in the
/// `StatusDocument`; they are taken as they are, never judged again from the figures.
public enum StatusVerdicts {
  /// Something wrong with a paired beacon.
  public enum BeaconProblem: Sendable, Equatable, CaseIterable {
    /// The daemon's verdict: below `lowBatteryMillivolts`, not yet back above it by the
    /// hysteresis (`HealthSettings.batteryHysteresis`).
    case batteryLow
    /// The daemon's verdict: not seen for `silentAfter`.
    case silent
    /// It restarted since the daemon started (its TLM uptime went backwards).
    case rebooted
    /// The daemon's verdict: its plain identity heard from two addresses at once, repeatedly.
    case possibleClone
  }

  /// A paired beacon's problems, in the order `doctor` reports them.
  public static func problems(_ beacon: StatusDocument.PairedBeacon) -> [BeaconProblem] {
    BeaconProblem.allCases.filter { problem in
      switch problem {
      case .batteryLow: beacon.health.batteryLow
      case .silent: beacon.health.silent
      case .rebooted: beacon.health.reboots > 0
      case .possibleClone: beacon.health.possibleClone
      }
    }
  }

  /// Failed posts in a row from which delivery is critical: one or two are a backoff, normal on
  /// a moving vehicle.
  public static let criticalFailures = 3

  /// Posting: ok while idle or delivering; failing is a warning, critical from
  /// `criticalFailures` in a row. Nothing is lost either way: the batches wait in the outbox.
  public static func delivery(_ upload: StatusDocument.Upload) -> HealthCheck.Status {
    switch upload.state {
    case .idle, .delivering: .ok
    case .failing: max(1, upload.consecutiveFailures) >= criticalFailures ? .critical : .warning
    }
  }

  /// The outbox's backlog: a warning from half its limit, critical from 90% (at the limit further
  /// batches are refused).
  public static func backlog(undelivered: Int, limit: Int) -> HealthCheck.Status {
    let share = Double(undelivered) / Double(max(1, limit))
    return share >= 0.9 ? .critical : share >= 0.5 ? .warning : .ok
  }

  /// Advertisements the scan dropped while the bridge was busy, or data entries it left out: a
  /// warning when either is not 0 (the box cannot keep up, or a device sends more than it may).
  public static func dropped(_ status: StatusDocument) -> HealthCheck.Status {
    status.droppedAdvertisements > 0 || status.manufacturerDataOverLimit > 0 ? .warning : .ok
  }

  /// Scanning with no beacon in range is a warning; not scanning is critical.
  public static func scanning(_ status: StatusDocument) -> HealthCheck.Status {
    guard status.scanning != nil else { return .critical }
    return status.beaconsInRange.isEmpty ? .warning : .ok
  }
}
