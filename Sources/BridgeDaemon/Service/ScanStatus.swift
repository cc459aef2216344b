import BeaconCore
import BlueZ
import Synchronization

/// What scanning does now, and the source doing it (whose cleanup the daemon awaits at exit).
/// Written by `ScanService`; read by `StatusReporter` and the D-Bus `Status`.
final class ScanStatus: Sendable {
  private let state = Mutex<(condition: ScanCondition, source: (any AdvertisementSource)?)>((.starting, nil))
  var condition: ScanCondition { state.withLock { $0.condition } }
  var source: (any AdvertisementSource)? { state.withLock { $0.source } }
  func set(_ condition: ScanCondition) { state.withLock { $0.condition = condition } }
  func started(_ source: any AdvertisementSource) { state.withLock { $0.source = source } }
  /// What the running BlueZ source dropped while the bridge held a batch (0 for HCI).
  var droppedAdvertisements: Int { (source as? BlueZAdvertisementSource)?.droppedAdvertisements ?? 0 }
  /// The entries past a device's cap that the running BlueZ source left out (0 for HCI).
  var manufacturerDataOverLimit: Int { (source as? BlueZAdvertisementSource)?.manufacturerDataOverLimit ?? 0 }
}
