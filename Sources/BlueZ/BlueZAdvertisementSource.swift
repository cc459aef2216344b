import BeaconCore
import DBus
import Synchronization

/// How the source hears advertisements.
public enum ScanMode: String, Sendable, Hashable {
  /// Adapter1.StartDiscovery with `{Transport: le, DuplicateData: true}`. BlueZ reports about one
  /// update per beacon per discovery window (~10 s; docs/DESIGN.md, Behaviour "Cadence").
  case activeDiscovery
  /// AdvertisementMonitorManager1 with an `or_patterns` monitor for iBeacon frames: passive LE
  /// scanning, where the controller supports it (BlueZ ≥ 5.56 with the experimental monitor
  /// API). Falls back to active discovery when the adapter does not offer it.
  case passiveMonitor
}

/// An `AdvertisementSource` over BlueZ's D-Bus API.
///
/// ```swift
/// let source = BlueZAdvertisementSource(bus: .system, adapter: nil) { print($0) }
/// try await source.run(isolation: nil) {} deliver: { events in … }
/// ```
///
/// - Sightings come from Device1 InterfacesAdded and from PropertiesChanged carrying RSSI,
///   TxPower, ManufacturerData or ServiceData; the other fields come from the mirrored object.
/// - `.lost` comes from InterfacesRemoved of a Device1 (BlueZ's TemporaryTimeout, ~30 s).
/// - If bluetoothd restarts (NameOwnerChanged for `org.bluez`) the source mirrors the new tree
///   and restarts discovery; an adapter removed and added again is resumed the same way.
/// - Cancelling the consumer removes the match rules, then calls StopDiscovery.
public final class BlueZAdvertisementSource: AdvertisementSource {
  public let bus: BusAddress
  /// `hciN`, or nil for the first powered adapter.
  public let adapter: String?
  /// The mode asked for; `mode` says which one is in use.
  public let preferredMode: ScanMode
  public let options: Options
  let logger: @Sendable (String) -> Void
  private let currentMode: Mutex<ScanMode>
  /// The scans started and not yet cleaned up, for `finished()`.
  private let running = Activity()
  /// What every scan of this source counted.
  let counts = Counts()

  /// What the scans count, added to by the reader thread.
  struct Counts: Sendable {
    /// Signals read while the consumer held its batch past the reader's read-ahead bound
    /// (`SignalSocket`), and so not handed on: nearly all are advertisements.
    let droppedSignals = EventCount()
    /// ManufacturerData entries of companies past `DeviceEntries.limit` for their device.
    let manufacturerDataOverLimit = EventCount()
  }

  /// Advertisements (Device1 signals) read from the bus but dropped because the consumer held a
  /// batch longer than the read-ahead bound lasts (2 MiB, about 6 s at 2,000 a second). Counted
  /// over every scan of this source; a scan through libdbus (no unix socket) counts none.
  public var droppedAdvertisements: Int { counts.droppedSignals.count }

  /// ManufacturerData entries not kept because their device sent more than 32 companies
  /// (`DeviceEntries.limit`), counted by the fast decoder over every scan of this source.
  public var manufacturerDataOverLimit: Int { counts.manufacturerDataOverLimit.count }

  public struct Options: Sendable {
    /// How long the D-Bus reader gathers messages before each pass (docs/DESIGN.md, Behaviour,
    /// wake-ups). 50 ms caps the source at 20 wake-ups a second at any advertisement rate.
    public var batchInterval: Duration = .milliseconds(50)
    /// Read BlueZ's signals from a socket of their own without libdbus (`SignalSocket`), which
    /// costs a fraction of libdbus's per-message work. Off, or where the bus address is not a
    /// unix socket, they come through libdbus.
    public var directSignalSocket = true
    /// Timeout of each BlueZ call.
    public var callTimeout: Duration = .seconds(5)
    /// How long to keep retrying after bluetoothd comes back before giving up until the next
    /// event (the issue asks for discovery within 5 s).
    public var resumeWindow: Duration = .seconds(5)
    /// Devices not seen for this long are removed from BlueZ (Adapter1.RemoveDevice), so a flood
    /// of random addresses grows neither BlueZ's object cache nor ours (bleak issue #500).
    /// Devices that are Paired, Trusted or Connected in BlueZ, and those `keep` names, stay.
    public var staleDeviceAge: Duration = .seconds(180)
    /// How often stale devices are looked for.
    public var pruneInterval: Duration = .seconds(60)
    /// The most devices the scan mirrors. Past it, those heard least recently (and neither bonded
    /// nor kept) are forgotten and reported lost, so that a flood of random addresses cannot grow
    /// memory without bound. A street holds hundreds; 5,000 leaves room for a car park.
    public var maxDevices = 5_000
    /// Addresses never to remove: the consumer's paired beacons.
    public var keep: @Sendable (BluetoothAddress) -> Bool = { _ in false }
    /// Told what the running scan waits for (no adapter, power, bluetoothd), and nil once
    /// discovery or the monitor runs again, so that a daemon can say so in its status.
    public var onWaiting: @Sendable (ScanWait?) -> Void = { _ in }
    /// Wait for bluetoothd and an adapter instead of failing when there is none at start: a
    /// service started before its hardware (the daemon) wants this; `scan` wants the error.
    public var waitForHardware = false
    public init() {}
  }

  public init(
    bus: BusAddress = .system, adapter: String? = nil, preferredMode: ScanMode = .activeDiscovery,
    options: Options = Options(), logger: @escaping @Sendable (String) -> Void = { _ in }
  ) {
    self.bus = bus
    self.adapter = adapter
    self.preferredMode = preferredMode
    self.options = options
    self.logger = logger
    self.currentMode = Mutex(preferredMode)
  }

  /// The scanning mode in use: the preferred one until scanning starts, then the one that
  /// actually runs (passive falls back to active where the adapter has no monitor support).
  public var mode: ScanMode { currentMode.withLock { $0 } }

  public var description: String {
    switch mode {
    case .activeDiscovery: "bluez (active discovery)"
    case .passiveMonitor: "bluez (passive monitor)"
    }
  }

  /// Connects, mirrors BlueZ and starts discovery (throwing `BlueZError` if BlueZ is not on the
  /// bus or there is no (such) adapter), then hands on one array per D-Bus read pass (or monitor
  /// call).
  ///
  /// The session runs on the caller's actor: a batch from the reader thread resumes it there, and
  /// `deliver` runs in the same job (no stream, no task of its own).
  public func run(
    isolation: isolated (any Actor)?, started: () -> Void, deliver: ([SourceEvent]) async -> Void
  ) async throws {
    let session = try await start()
    started()
    try await drive(session, isolation: isolation, deliver)
  }

  /// Connects, mirrors BlueZ and starts discovery; cleans up and throws if that fails.
  private func start() async throws -> DiscoverySession {
    let connection = try Connection(bus, options: .init(batchInterval: options.batchInterval))
    let session = DiscoverySession(
      connection: connection, adapterName: adapter, preferredMode: preferredMode, options: options,
      counts: counts, logger: logger
    ) { [self] mode in self.currentMode.withLock { $0 = mode } }
    running.begin()
    do {
      try await session.begin()
    } catch {
      // Cleanup must not inherit cancellation (the consumer stopping during `begin`), or its
      // calls would fail at once.
      await Task { await session.end() }.value
      running.end()
      throw error
    }
    return session
  }

  /// Runs a begun session until it ends or the calling task is cancelled, then cleans up; throws
  /// why it ended, if not by cancellation.
  private func drive(
    _ session: DiscoverySession, isolation: isolated (any Actor)?, _ deliver: ([SourceEvent]) async -> Void
  ) async throws {
    await session.run(isolation: isolation, deliver)
    // Cleanup must not inherit cancellation, or its calls would fail at once.
    await Task { await session.end() }.value
    running.end()
    if let failure = session.failure { throw failure }
  }

  /// Waits for every scan's cleanup (match rules removed, StopDiscovery) to complete.
  public func finished() async { await running.idle() }
}

/// A count of things under way, and the tasks waiting for it to reach zero.
final class Activity: Sendable {
  private struct State {
    var count = 0
    var waiters: [CheckedContinuation<Void, Never>] = []
  }
  private let state = Mutex(State())

  func begin() { state.withLock { $0.count += 1 } }

  func end() {
    let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
      state.count -= 1
      guard state.count == 0 else { return [] }
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Returns once nothing is under way.
  func idle() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let now = state.withLock { state -> Bool in
        if state.count == 0 { return true }
        state.waiters.append(continuation)
        return false
      }
      if now { continuation.resume() }
    }
  }
}
