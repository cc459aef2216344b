/// What a BlueZ scan waits for, as a reason a caller switches on (`doctor` chooses its fix by
/// it); `sentence` is how the status, the journal and `scan` say it.
public struct ScanWait: Hashable, Sendable, CustomStringConvertible {
  public enum Reason: String, Hashable, Sendable {
    /// No Bluetooth controller in the kernel: Debian starts bluetoothd only once one appears.
    case noAdapter
    /// bluetoothd is not on the system bus, though the kernel has a controller.
    case bluetoothdAbsent
    /// bluetoothd runs but has no adapter.
    case noBlueZAdapter
    /// The configured adapter is not among BlueZ's.
    case adapterMissing
    /// The adapter is off.
    case adapterOff
    /// Discovery stopped and is being started again.
    case discoveryRestarting

    /// Whether an adapter (plugged in, powered) is what the scan waits for.
    public var wantsAdapter: Bool {
      switch self {
      case .noAdapter, .noBlueZAdapter, .adapterMissing, .adapterOff: true
      case .bluetoothdAbsent, .discoveryRestarting: false
      }
    }
  }

  public var reason: Reason
  /// The adapter named in the configuration (`adapterMissing`).
  public var adapter: String?

  public init(_ reason: Reason, adapter: String? = nil) {
    self.reason = reason
    self.adapter = adapter
  }

  public var description: String {
    switch reason {
    case .noAdapter: "waiting for an adapter (none on this machine; bluetoothd starts when one appears)"
    case .bluetoothdAbsent: "waiting for bluetoothd (it is not running)"
    case .noBlueZAdapter: "waiting for an adapter (BlueZ has none)"
    case .adapterMissing: "waiting for adapter \(adapter ?? "?")"
    case .adapterOff: "waiting for an adapter to be powered on"
    case .discoveryRestarting: "waiting for discovery to start again"
    }
  }
}
