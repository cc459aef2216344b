import BeaconCore

extension ScanBackend {
  /// Presence defaults that suit the backend's cadence (docs/DESIGN.md, Behaviour, "Cadence depends on the
  /// backend"). BlueZ active discovery reports a beacon about once per 10.24 s discovery window,
  /// sometimes missing windows, and removes the device itself about 30 s (TemporaryTimeout) after
  /// its last report: a 10 s exit would flap every beacon, so presence waits 45 s (or BlueZ's own
  /// loss) and the active beacon is held 60 s. Raw HCI sees every advertisement and keeps the core
  /// defaults.
  public func apply(to configuration: inout BridgeConfiguration) {
    switch self {
    case .bluez:
      configuration.presence.exitTimeout = max(configuration.presence.exitTimeout, 45)
      configuration.presence.exitTimeoutMax = max(configuration.presence.exitTimeoutMax, 90)
      configuration.selector.activeHold = max(configuration.selector.activeHold, 60)
    case .hci:
      break
    }
  }
}
