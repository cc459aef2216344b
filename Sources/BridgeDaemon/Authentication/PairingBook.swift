import BeaconCore
import BeaconCrypto
import FoundationEssentials

/// The one owner of the daemon's pairings and keys (docs/ARCHITECTURE.md): it loads them from the
/// store into the bridge, the scan's pruning filter (`PairedBeacons`) and the keys (`KeyRing`),
/// at start and after every change (D-Bus Pair/Unpair/PairWithKey, `PairingWatcher`, the fleet's
/// document, SIGHUP), and it is the only writer of the EID beacons' tracking to the store.
///
/// A refresh is one step: refreshes run one at a time, in order, and the keys are changed in
/// place under the ring's lock, so an EID window heard while the store is read is kept, not
/// replaced by the store's older one.
public actor PairingBook {
  public nonisolated let store: Store
  public nonisolated let bridge: BeaconBridge
  public nonisolated let paired: PairedBeacons
  public nonisolated let keys: KeyRing
  /// What the store holds of each EID pairing's tracking, as last written or read.
  private var saved: [Int64: EIDResolver.Tracking] = [:]
  private var busy = false
  private var waiting: [CheckedContinuation<Void, Never>] = []

  /// `epoch`: the box's seconds at the bridge's time 0 (the wall clock at start); box time then
  /// follows the wall clock (`KeyAuthenticator.wallClock`).
  /// `wallClock`: nil keeps box time at `epoch` plus the bridge's time (the tests).
  public init(
    store: Store, bridge: BeaconBridge, paired: PairedBeacons, epoch: Int64,
    wallClock: (@Sendable () -> Double)? = { Date().timeIntervalSince1970 }
  ) {
    self.store = store
    self.bridge = bridge
    self.paired = paired
    var authenticator = KeyAuthenticator(eidClockTolerance: 0, epoch: epoch)
    authenticator.wallClock = wallClock
    keys = KeyRing(authenticator)
  }

  /// The book for a bridge about to start: its epoch from the wall clock now.
  public static func starting(store: Store, bridge: BeaconBridge, paired: PairedBeacons) async -> PairingBook
  {
    let now = await bridge.now
    let epoch = Int64((Date().timeIntervalSince1970 - now.seconds).rounded(.down))
    return PairingBook(store: store, bridge: bridge, paired: paired, epoch: epoch)
  }

  /// Loads the store's pairings and keys (with the bridge's current `eidClockTolerance` and
  /// `rpaMaxAge`) into the bridge, `PairedBeacons` and the keys, the EIDs of the beacons the
  /// store says were heard already in the table; returns the pairings.
  @discardableResult
  public func refresh() async throws(StoreError) -> [Pairing] {
    await enter()
    defer { leave() }
    let pairings = try await store.pairings()
    paired.update(pairings)
    await bridge.setPairings(pairings)
    let configuration = bridge.host.configuration
    let fresh = try await store.keyAuthenticator(
      eidClockTolerance: configuration.eidClockTolerance, epoch: 0, rpaMaxAge: configuration.rpaMaxAge)
    for (id, tracking) in fresh.tracking where saved[id] == nil { saved[id] = tracking }
    keys.reconcile(with: fresh)
    keys.primeTable(at: await bridge.now)
    await bridge.setAuthenticator(keys.isEmpty ? nil : keys)
    return pairings
  }

  /// Writes the EID pairings' tracking that changed since it was last written; a failed write
  /// is thrown and tried again at the next call.
  public func saveTracking() async throws(StoreError) {
    let now = keys.tracking
    for (id, tracking) in now.sorted(by: { $0.key < $1.key }) where saved[id] != tracking {
      try await store.saveTracking(
        pairing: id, clockOffset: tracking.clockOffset, heardWindow: tracking.heardWindow)
      saved[id] = tracking
    }
    for id in saved.keys where now[id] == nil { saved[id] = nil }
  }

  private func enter() async {
    if busy {
      await withCheckedContinuation { waiting.append($0) }
    }
    busy = true
  }

  private func leave() {
    if waiting.isEmpty {
      busy = false
    } else {
      waiting.removeFirst().resume()
    }
  }
}
