import BeaconCore
import DBus
import FoundationEssentials
import GZone
import Synchronization

/// What the bridge and the G-Zone poller announce as D-Bus signals. They are made before the
/// D-Bus service exists, so they queue here until it runs.
///
/// The sending task takes them a burst at a time and is woken once per burst, not once per
/// announcement: a wake-up each (an `AsyncStream` element) was a task switch each, whose
/// libdispatch work items, allocated on one thread and cached freed on another, stayed behind
/// scattered over the heap after a burst. Only the events that are signals are queued
/// (`BridgeService.announces(_:)`).
final class Announcements: Sendable {
  enum Item: Sendable {
    case bridge(BridgeEvent)
    case gzone(GZoneEvent)
  }

  /// Announcements are signals for listeners, not data: past this many unsent, the oldest go.
  static let limit = 1024

  private let pending = Mutex<[Item]>([])
  private let arrived = Doorbell()

  func yield(_ item: Item) {
    pending.withLock { items in
      // The oldest are dropped in bulk (amortized O(1)); `next` hands on only the newest `limit`.
      if items.count == 2 * Self.limit { items.removeFirst(Self.limit) }
      items.append(item)
    }
    arrived.ring()
  }

  /// The newest `limit` announcements made since the last call, oldest first, once there is
  /// one; empty when the task is cancelled.
  func next() async -> ArraySlice<Item> {
    while !Task.isCancelled {
      let items = pending.withLock { items -> [Item] in
        defer { items = [] }
        return items
      }
      if !items.isEmpty { return items.suffix(Self.limit) }
      await arrived.wait()
    }
    return []
  }
}

/// What the D-Bus API reads besides the bridge and the store.
struct BridgeServiceContext: Sendable {
  let scanStatus: ScanStatus
  /// The pairings' and keys' one owner: Pair, Unpair and PairWithKey reload through it.
  let book: PairingBook
  let gzone: GZonePoller?
  /// The fleet link's state, when `[Fleet]` is configured.
  var fleet: FleetLinkStatus? = nil

  var scan: ScanCondition { scanStatus.condition }
}

/// Serves `org.beaconbridge.Bridge1` for a running bridge, and sends its signals.
final class BridgeService: Service {
  let connection: Connection
  let announcements: Announcements
  private let object: ExportedObject

  init(
    connection: Connection, bridge: BeaconBridge, store: Store, context: BridgeServiceContext,
    logger: DaemonLogger, announcements: Announcements
  ) throws {
    self.connection = connection
    self.announcements = announcements
    let methods = BridgeMethods(
      bridge: bridge, store: store, state: context, logger: logger,
      callerUID: { [connection] name in try? await connection.unixUser(of: name) })
    object = try connection.export(BridgeServiceNames.path) { call in
      await Self.handle(call, methods: methods)
    }
  }

  /// Sends the announcements as signals until cancelled.
  func run() async {
    while true {
      let items = await announcements.next()
      if items.isEmpty { return }
      for item in items {
        switch item {
        case .bridge(let event): signal(event)
        case .gzone(let event): signal(gzone: event)
        }
      }
    }
  }

  /// Whether `event` is sent as a signal (`signal(_:)`). The others are not queued: a flood of
  /// random addresses is hundreds of thousands of beacons entering and leaving, none of them a
  /// signal, and each queued one woke the sending task (a libdispatch work item allocated on the
  /// reader thread, cached freed on a worker: after the flood about a thousand of them stayed
  /// scattered over the heap, each keeping a page resident).
  static func announces(_ event: BridgeEvent) -> Bool {
    switch event {
    case .activeBeaconChanged, .tripTagged, .beaconHealth: true
    default: false
    }
  }

  /// Announces an event as a signal (those `announces(_:)` takes).
  private func signal(_ event: BridgeEvent) {
    switch event {
    case .activeBeaconChanged(let active):
      try? connection.emit(
        path: BridgeServiceNames.path, interface: BridgeServiceNames.interface,
        member: BridgeServiceNames.SignalName.activeBeaconChanged,
        [.string(active?.deviceId.rawValue ?? "")])
    case .tripTagged(let tripId, let resolution):
      try? connection.emit(
        path: BridgeServiceNames.path, interface: BridgeServiceNames.interface,
        member: BridgeServiceNames.SignalName.tripTagged,
        [
          .string(tripId.rawValue), .string(resolution.deviceId?.rawValue ?? ""), .string(resolution.reason),
          .string(resolution.snapshot?.id.authentication.rawValue ?? ""),
        ])
    case .beaconHealth(let change):
      var json = ""
      JSONWriter.writeObject(change.fields, to: &json)
      try? connection.emit(
        path: BridgeServiceNames.path, interface: BridgeServiceNames.interface,
        member: BridgeServiceNames.SignalName.beaconHealth,
        [.string(change.deviceId.rawValue), .string(change.kind.rawValue), .string(json)])
    default:
      break
    }
  }

  /// Announces a G-Zone change as `GZoneEvent(s type, s json)`.
  private func signal(gzone event: GZoneEvent) {
    try? connection.emit(
      path: BridgeServiceNames.path, interface: BridgeServiceNames.interface,
      member: BridgeServiceNames.SignalName.gzoneEvent,
      [.string(event.type), .string(event.jsonText)])
  }

  static func error(_ name: String, _ message: String) -> MethodResult {
    .failure(DBusError(ErrorName(BridgeServiceNames.errorPrefix + name), message))
  }

  /// Answers one call: introspection, or the Bridge1 method it names (`BridgeMethods`), with
  /// the bridge's errors as `org.beaconbridge.Error.*`.
  static func handle(_ call: MethodCall, methods: BridgeMethods) async -> MethodResult {
    if call.interface == .introspectable, call.member == "Introspect" {
      return .success([.string(introspection)])
    }
    guard call.interface == nil || call.interface == BridgeServiceNames.interface,
      let method = methods.method(call.member)
    else {
      return .failure(.unknownMethod(call))
    }
    do {
      return try await method(BridgeMethods.Arguments(call.body, sender: call.sender))
    } catch let error as BridgeError {
      let name =
        switch error.code {
        case .notArmed: "NotArmed"
        case .refused: "Refused"
        case .trip: "Trip"
        case .invalidConfiguration, .journal: "Failed"
        }
      return Self.error(name, error.description)
    } catch let error as StoreError where [.fleetOwnsPairings, .full, .coldSearch].contains(error.code) {
      return Self.error("Refused", error.description)
    } catch {
      return Self.error("Failed", "\(error)")
    }
  }

  static let introspection = """
    <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
     "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
    <node>
      <interface name="org.freedesktop.DBus.Introspectable">
        <method name="Introspect"><arg name="xml" type="s" direction="out"/></method>
      </interface>
      <interface name="org.beaconbridge.Bridge1">
        <method name="Status"><arg name="json" type="s" direction="out"/></method>
        <method name="Pairings"><arg name="json" type="s" direction="out"/></method>
        <method name="Pair">
          <arg name="uuid" type="s" direction="in"/><arg name="major" type="i" direction="in"/>
          <arg name="minor" type="i" direction="in"/><arg name="deviceId" type="s" direction="in"/>
          <arg name="label" type="s" direction="in"/>
        </method>
        <method name="PairWithKey">
          <arg name="scheme" type="s" direction="in"/><arg name="key" type="s" direction="in"/>
          <arg name="rotationExponent" type="i" direction="in"/><arg name="beaconClock" type="x" direction="in"/>
          <arg name="deviceId" type="s" direction="in"/><arg name="label" type="s" direction="in"/>
          <arg name="json" type="s" direction="out"/>
        </method>
        <method name="Unpair">
          <arg name="deviceId" type="s" direction="in"/><arg name="removed" type="u" direction="out"/>
        </method>
        <method name="TripStart">
          <arg name="tripId" type="s" direction="in"/><arg name="json" type="s" direction="out"/>
        </method>
        <method name="TripEvents">
          <arg name="tripId" type="s" direction="in"/><arg name="events" type="s" direction="in"/>
          <arg name="accepted" type="u" direction="out"/>
        </method>
        <method name="TripEnd">
          <arg name="tripId" type="s" direction="in"/><arg name="json" type="s" direction="out"/>
        </method>
        <method name="RecentLogs"><arg name="json" type="s" direction="out"/></method>
        <method name="TripRetry">
          <arg name="tripId" type="s" direction="in"/><arg name="json" type="s" direction="out"/>
        </method>
        <method name="TripAssign">
          <arg name="tripId" type="s" direction="in"/><arg name="deviceId" type="s" direction="in"/>
        </method>
        <method name="GZoneRefresh"><arg name="json" type="s" direction="out"/></method>
        <signal name="GZoneEvent"><arg name="type" type="s"/><arg name="json" type="s"/></signal>
        <signal name="ActiveBeaconChanged"><arg name="deviceId" type="s"/></signal>
        <signal name="BeaconHealth">
          <arg name="deviceId" type="s"/><arg name="change" type="s"/><arg name="json" type="s"/>
        </signal>
        <signal name="TripTagged">
          <arg name="tripId" type="s"/><arg name="deviceId" type="s"/><arg name="resolution" type="s"/>
          <arg name="authentication" type="s"/>
        </signal>
      </interface>
    </node>
    """
}
