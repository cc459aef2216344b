import DBus

/// Where the scan stands with its adapter: the one place that says whether discovery or the
/// monitor runs, and on which adapter.
enum ScanState: Sendable, Equatable {
  /// No adapter in use: waiting for bluetoothd, an adapter, or power.
  case idle
  /// StartDiscovery went out on the adapter and did not succeed (yet): discovery may run all the
  /// same, so the scan's end stops it; scanning has not started.
  case requested(ObjectPath)
  /// Active discovery runs on the adapter.
  case discovering(ObjectPath)
  /// Our advertisement monitor is registered on the adapter (passive mode).
  case monitoring(ObjectPath)

  /// The adapter the scan runs on (discovering or monitoring).
  var adapter: ObjectPath? {
    switch self {
    case .discovering(let path), .monitoring(let path): path
    case .idle, .requested: nil
    }
  }

  /// The adapter a StartDiscovery may have started discovery on, which the end stops.
  var discoveryToStop: ObjectPath? {
    switch self {
    case .requested(let path), .discovering(let path): path
    case .idle, .monitoring: nil
    }
  }

  /// The adapter the monitor is registered on, which the end unregisters.
  var monitorAdapter: ObjectPath? {
    if case .monitoring(let path) = self { return path }
    return nil
  }

  /// The adapter stopped scanning for us (bluetoothd left, the adapter was removed or powered off,
  /// someone else stopped discovery): back to waiting. A request never answered stays, for the end.
  mutating func stop() {
    if case .requested = self { return }
    self = .idle
  }
}
