import BeaconCore
import DBus

/// How the source hears advertisements.
public enum ScanMode: String, Sendable, Hashable {
  /// Adapter1.StartDiscovery with `{Transport: le, DuplicateData: true}`. BlueZ reports about one
  /// update per beacon per discovery window (~10 s; DESIGN §5 "Cadence").
  case activeDiscovery
  /// AdvertisementMonitorManager1 with an or_patterns monitor: every advertisement, passively.
  /// Not implemented yet; the source never reports this mode today.
  case passiveMonitor
}

/// An `AdvertisementSource` over BlueZ's D-Bus API.
///
/// ```swift
/// let source = BlueZAdvertisementSource(bus: .system, adapter: nil) { print($0) }
/// for try await event in try await source.events() { … }
/// ```
///
/// - Sightings come from Device1 InterfacesAdded and from PropertiesChanged carrying RSSI,
///   TxPower, ManufacturerData or ServiceData; the other fields come from the mirrored object.
/// - `.lost` comes from InterfacesRemoved of a Device1 (BlueZ's TemporaryTimeout, ~30 s).
/// - If bluetoothd restarts (NameOwnerChanged for `org.bluez`) the source mirrors the new tree
///   and restarts discovery; an adapter removed and added again is resumed the same way.
/// - Cancelling the consumer removes the match rules, then calls StopDiscovery.
public struct BlueZAdvertisementSource: AdvertisementSource {
  public var bus: BusAddress
  /// `hciN`, or nil for the first powered adapter.
  public var adapter: String?
  public var options: Options
  let logger: @Sendable (String) -> Void

  public struct Options: Sendable {
    /// How long the D-Bus reader gathers messages before each pass (DESIGN §5, wake-ups). 50 ms
    /// caps the source at 20 wake-ups a second at any advertisement rate.
    public var batchInterval: Duration = .milliseconds(50)
    /// Timeout of each BlueZ call.
    public var callTimeout: Duration = .seconds(5)
    /// How long to keep retrying after bluetoothd comes back before giving up until the next
    /// event (the issue asks for discovery within 5 s).
    public var resumeWindow: Duration = .seconds(5)
    public init() {}
  }

  public init(
    bus: BusAddress = .system, adapter: String? = nil, options: Options = Options(),
    logger: @escaping @Sendable (String) -> Void = { _ in }
  ) {
    self.bus = bus
    self.adapter = adapter
    self.options = options
    self.logger = logger
  }

  /// The scanning mode in use.
  public var mode: ScanMode { .activeDiscovery }

  public var description: String { "bluez (active discovery)" }

  /// Connects, mirrors BlueZ and starts discovery; throws `BlueZError` if BlueZ is not on the bus
  /// or there is no (such) adapter.
  public func events() async throws -> AsyncThrowingStream<SourceEvent, any Error> {
    let connection = try Connection(bus, options: .init(batchInterval: options.batchInterval))
    let session = DiscoverySession(
      connection: connection, adapterName: adapter, options: options, logger: logger)
    do {
      try await session.begin()
    } catch {
      await session.end()
      throw error
    }
    let (stream, continuation) = AsyncThrowingStream.makeStream(of: SourceEvent.self)
    let task = Task {
      await session.run { continuation.yield($0) }
      // Cleanup must not inherit cancellation, or its calls would fail at once.
      await Task { await session.end() }.value
      continuation.finish(throwing: session.failure)
    }
    continuation.onTermination = { _ in task.cancel() }
    return stream
  }
}
