import BeaconCore
import BlueZ
import HCI
import Synchronization

extension ScanBackend {
  /// The advertisement source for this backend: one construction for the daemon and `scan`.
  /// - Parameters:
  ///   - keep: addresses BlueZ's pruning keeps (paired beacons: `PairedBeacons.contains`).
  ///   - waitForHardware: wait for bluetoothd and an adapter instead of failing (the daemon).
  ///   - onWaiting: what a BlueZ scan waits for, nil once it scans.
  ///   - log: the BlueZ source's progress lines.
  public func makeSource(
    adapter: HCIDeviceID?, keep: @escaping @Sendable (BluetoothAddress) -> Bool,
    waitForHardware: Bool = false,
    onWaiting: @escaping @Sendable (ScanWait?) -> Void = { _ in },
    log: @escaping @Sendable (String) -> Void
  ) -> any AdvertisementSource {
    switch self {
    case .bluez:
      var options = BlueZAdvertisementSource.Options()
      options.keep = keep
      options.waitForHardware = waitForHardware
      options.onWaiting = onWaiting
      return BlueZAdvertisementSource(bus: .system, adapter: adapter?.name, options: options, logger: log)
    case .hci:
      return HCIAdvertisementSource(configuration: HCIScanConfiguration(adapter: adapter?.index ?? 0))
    }
  }
}

/// The pairings, and the addresses paired beacons were heard at: BlueZ never prunes those
/// devices from its cache (`BlueZAdvertisementSource.Options.keep`).
public final class PairedBeacons: Sendable {
  private let state = Mutex<(pairings: PairingSet, addresses: Set<BluetoothAddress>)>((PairingSet(), []))

  public init() {}

  public func update(_ pairings: [Pairing]) { state.withLock { $0.pairings = PairingSet(pairings) } }

  public func contains(_ address: BluetoothAddress) -> Bool {
    state.withLock { $0.addresses.contains(address) }
  }

  /// Notes where a paired beacon was heard.
  public func entered(_ beacon: TrackedBeacon) {
    state.withLock { s in
      if s.pairings.pairing(for: beacon.id) != nil { s.addresses.insert(beacon.address) }
    }
  }
}
