import BeaconCore
import DBus
import FoundationEssentials
import GZone

/// The daemon's D-Bus API (docs/dbus-api.md): `org.beaconbridge` on the system bus, object
/// `/org/beaconbridge`, interface `org.beaconbridge.Bridge1`. Structured results are JSON text,
/// so that shell tools and the CLI read them alike.
public enum BridgeServiceNames {
  public static let busName: BusName = "org.beaconbridge"
  public static let path: ObjectPath = "/org/beaconbridge"
  public static let interface: InterfaceName = "org.beaconbridge.Bridge1"
  public static let errorPrefix = "org.beaconbridge.Error."

  /// The methods of Bridge1, named once for the service and the CLI (docs/dbus-api.md).
  public enum Method {
    public static let status: MemberName = "Status"
    public static let pairings: MemberName = "Pairings"
    public static let recentLogs: MemberName = "RecentLogs"
    public static let pair: MemberName = "Pair"
    public static let unpair: MemberName = "Unpair"
    public static let tripStart: MemberName = "TripStart"
    public static let tripEvents: MemberName = "TripEvents"
    public static let tripEnd: MemberName = "TripEnd"
    public static let tripRetry: MemberName = "TripRetry"
    public static let tripAssign: MemberName = "TripAssign"
    public static let gzoneRefresh: MemberName = "GZoneRefresh"
    /// Every method, as the introspection data lists them.
    public static let all = [
      status, pairings, recentLogs, pair, unpair, tripStart, tripEvents, tripEnd, tripRetry, tripAssign,
      gzoneRefresh,
    ]
  }

  /// The signals of Bridge1.
  public enum SignalName {
    public static let activeBeaconChanged: MemberName = "ActiveBeaconChanged"
    public static let tripTagged: MemberName = "TripTagged"
    public static let gzoneEvent: MemberName = "GZoneEvent"
    /// A paired beacon crossed a health threshold: `(s deviceId, s change, s json)`.
    public static let beaconHealth: MemberName = "BeaconHealth"
  }
}

/// What the bridge and the G-Zone poller announce as D-Bus signals. They are made before the
/// D-Bus service exists, so they queue here until it runs.
struct Announcements: Sendable {
  enum Item: Sendable {
    case bridge(BridgeEvent)
    case gzone(GZoneEvent)
  }

  let stream: AsyncStream<Item>
  private let continuation: AsyncStream<Item>.Continuation

  init() {
    // Announcements are signals for listeners, not data: past this many unsent, the oldest go.
    (stream, continuation) = AsyncStream.makeStream(of: Item.self, bufferingPolicy: .bufferingNewest(1024))
  }

  func yield(_ item: Item) { continuation.yield(item) }
}

/// What the D-Bus API reads besides the bridge and the store.
struct BridgeServiceContext: Sendable {
  let scanStatus: ScanStatus
  let paired: PairedBeacons
  let gzone: GZonePoller?

  var scan: ScanCondition { scanStatus.condition }
  func setPairings(_ pairings: [Pairing]) { paired.update(pairings) }
}

/// Serves `org.beaconbridge.Bridge1` for a running bridge, and sends its signals.
final class BridgeService: Service {
  let connection: Connection
  let announcements: Announcements
  private let object: ExportedObject

  init(
    connection: Connection, bridge: BeaconBridge, store: Store, context: BridgeServiceContext,
    host: any ScopeHost, logger: DaemonLogger, announcements: Announcements
  ) throws {
    self.connection = connection
    self.announcements = announcements
    object = try connection.export(BridgeServiceNames.path) { [bridge, store, context, host, logger] call in
      if call.member == BridgeServiceNames.Method.recentLogs {
        return .success([.string(JSONValue.array(logger.recent.map { .string($0) }).compactText)])
      }
      return await Self.handle(call, bridge: bridge, store: store, state: context, host: host)
    }
  }

  /// Sends the announcements as signals until cancelled.
  func run() async {
    for await item in announcements.stream {
      switch item {
      case .bridge(let event): signal(event)
      case .gzone(let event): signal(gzone: event)
      }
    }
  }

  /// Announces an event as a signal.
  private func signal(_ event: BridgeEvent) {
    switch event {
    case .activeBeaconChanged(let active):
      try? connection.emit(
        path: BridgeServiceNames.path, interface: BridgeServiceNames.interface,
        member: BridgeServiceNames.SignalName.activeBeaconChanged,
        [.string(active?.deviceId ?? "")])
    case .tripTagged(let tripId, let resolution):
      try? connection.emit(
        path: BridgeServiceNames.path, interface: BridgeServiceNames.interface,
        member: BridgeServiceNames.SignalName.tripTagged,
        [.string(tripId), .string(resolution.deviceId ?? ""), .string(resolution.reason)])
    case .beaconHealth(let change):
      var json = ""
      JSONWriter.writeObject(change.jsonFields, to: &json)
      try? connection.emit(
        path: BridgeServiceNames.path, interface: BridgeServiceNames.interface,
        member: BridgeServiceNames.SignalName.beaconHealth,
        [.string(change.deviceId), .string(change.kind.rawValue), .string(json)])
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

  /// A call whose arguments are wrong: the standard `org.freedesktop.DBus.Error.InvalidArgs`, with
  /// the sentence the CLI would print for the same value (the identifier types' messages).
  static func invalidArgs(_ message: String) -> MethodResult {
    .failure(DBusError(.invalidArgs, message))
  }

  /// Identifiers from a call's arguments, each built once by its validated type.
  enum Argument {
    static func tripID(_ text: String?, _ signature: String) -> Result<TripID, DBusError> {
      guard let text else { return .failure(DBusError(.invalidArgs, signature)) }
      do { return .success(try TripID(text)) } catch {
        return .failure(DBusError(.invalidArgs, error.description))
      }
    }

    static func deviceID(_ text: String?, _ signature: String) -> Result<DeviceID, DBusError> {
      guard let text else { return .failure(DBusError(.invalidArgs, signature)) }
      do { return .success(try DeviceID(text)) } catch {
        return .failure(DBusError(.invalidArgs, error.description))
      }
    }
  }

  static func handle(
    _ call: MethodCall, bridge: BeaconBridge, store: Store, state: BridgeServiceContext, host: any ScopeHost
  ) async -> MethodResult {
    if call.interface?.rawValue == "org.freedesktop.DBus.Introspectable", call.member == "Introspect" {
      return .success([.string(introspection)])
    }
    guard call.interface == nil || call.interface == BridgeServiceNames.interface else {
      return .failure(.unknownMethod(call))
    }
    let args = call.body
    func string(_ i: Int) -> String? { i < args.count ? args[i].string : nil }
    func int(_ i: Int) -> Int? { i < args.count ? args[i].int : nil }
    do {
      switch call.member {
      case BridgeServiceNames.Method.status:
        let outbox = try? await store.outboxSummary()
        let json = await bridge.status.json(
          scan: state.scan, outbox: outbox, droppedAdvertisements: state.scanStatus.droppedAdvertisements)
        return .success([.string(json.compactText)])
      case BridgeServiceNames.Method.pairings:
        return .success([.string(JSONValue.array(try await store.pairings().map(\.json)).compactText)])
      case BridgeServiceNames.Method.pair:
        guard let uuidText = string(0), let major = int(1), let minor = int(2), let deviceText = string(3)
        else {
          return invalidArgs("Pair takes (s uuid, i major, i minor, s deviceId, s label); -1 = any")
        }
        let pairing: Pairing
        do {
          // -1 is the wire's "any"; every other number must be 0…65535: never clamped.
          guard let uuid = UUID(uuidString: uuidText) else {
            throw IdentifierError(
              field: "UUID", value: uuidText, rule: "is not a UUID like E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")
          }
          let identity = try PairingIdentity(
            uuid: uuid, major: major == -1 ? nil : major, minor: minor == -1 ? nil : minor)
          let label = string(4).flatMap { $0.isEmpty ? nil : $0 }
          if let label { try PairingLabel.check(label) }
          pairing = Pairing(identity: identity, deviceId: try DeviceID(deviceText), label: label)
        } catch let error as IdentifierError {
          return invalidArgs(error.description)
        }
        try await store.pair(pairing)
        try await reloadPairings(store: store, state: state, bridge: bridge)
        return .success([])
      case BridgeServiceNames.Method.unpair:
        let deviceId: DeviceID
        switch Argument.deviceID(string(0), "Unpair takes (s deviceId)") {
        case .success(let id): deviceId = id
        case .failure(let error): return .failure(error)
        }
        let removed = try await store.unpair(deviceId: deviceId.rawValue)
        try await reloadPairings(store: store, state: state, bridge: bridge)
        return .success([.uint32(UInt32(removed))])
      case BridgeServiceNames.Method.tripStart:
        let tripId: TripID
        switch Argument.tripID(string(0), "TripStart takes (s tripId)") {
        case .success(let id): tripId = id
        case .failure(let error): return .failure(error)
        }
        try await bridge.tripStart(tripId)
        return .success([.string(await tripJSON(bridge, tripId.rawValue).compactText)])
      case BridgeServiceNames.Method.tripEvents:
        let signature = "TripEvents takes (s tripId, s eventsJSONArray)"
        let tripId: TripID
        switch Argument.tripID(string(0), signature) {
        case .success(let id): tripId = id
        case .failure(let error): return .failure(error)
        }
        guard let text = string(1) else { return invalidArgs(signature) }
        let events: [TripEvent]
        do { events = try parseEvents(text) } catch { return invalidArgs("\(error)") }
        try await bridge.tripEvents(tripId, events: events)
        return .success([.uint32(UInt32(events.count))])
      case BridgeServiceNames.Method.tripEnd:
        let tripId: TripID
        switch Argument.tripID(string(0), "TripEnd takes (s tripId)") {
        case .success(let id): tripId = id
        case .failure(let error): return .failure(error)
        }
        let before = await tripJSON(bridge, tripId.rawValue)
        try await bridge.tripEnd(tripId)
        let after = await tripJSON(bridge, tripId.rawValue)
        return .success([.string((after == .null ? before : after).compactText)])
      case BridgeServiceNames.Method.tripRetry:
        // Dead letters go straight to the upload layer again (`Store.retryDeadLetters`).
        var trip: String?
        if let text = string(0), !text.isEmpty {
          switch Argument.tripID(text, "TripRetry takes (s tripId)") {
          case .success(let id): trip = id.rawValue
          case .failure(let error): return .failure(error)
          }
        }
        let retried = try await store.retryDeadLetters(tripId: trip, post: host.postTripEventBatch)
        return .success([.string(retried.json.compactText)])
      case BridgeServiceNames.Method.tripAssign:
        let signature = "TripAssign takes (s tripId, s deviceId)"
        let tripId: TripID
        let deviceId: DeviceID
        switch Argument.tripID(string(0), signature) {
        case .success(let id): tripId = id
        case .failure(let error): return .failure(error)
        }
        switch Argument.deviceID(string(1), signature) {
        case .success(let id): deviceId = id
        case .failure(let error): return .failure(error)
        }
        try await bridge.assign(tripId, deviceId: deviceId)
        return .success([])
      case BridgeServiceNames.Method.gzoneRefresh:
        guard let gzone = state.gzone else {
          return error("NotConfigured", GZonePollerError.notConfigured.description)
        }
        let refreshed: GZonePoller.Refresh
        do { refreshed = try await gzone.refresh(reason: "asked over D-Bus") } catch {
          return Self.error(error == .notConfigured ? "NotConfigured" : "Failed", error.description)
        }
        return .success([.string(refreshed.jsonText)])
      default:
        return .failure(.unknownMethod(call))
      }
    } catch let error as BridgeError {
      let name =
        switch error.code {
        case .notArmed: "NotArmed"
        case .refused: "Refused"
        case .trip: "Trip"
        case .invalidConfiguration, .journal: "Failed"
        }
      return Self.error(name, error.description)
    } catch {
      return Self.error("Failed", "\(error)")
    }
  }

  /// After Pair/Unpair: the store is the truth; the selector and the pruning filter follow it.
  static func reloadPairings(store: Store, state: BridgeServiceContext, bridge: BeaconBridge) async throws {
    let all = try await store.pairings()
    state.setPairings(all)
    await bridge.setPairings(all)
  }

  /// A JSON array of event objects, each with a string `type`.
  static func parseEvents(_ text: String) throws -> [TripEvent] {
    let json = try JSONValue.parse(Data(text.utf8))
    guard let array = json.arrayValue else {
      throw TripEventError("the events must be a JSON array of objects")
    }
    return try array.enumerated().map { i, item in
      do { return try TripEvent(json: item) } catch { throw TripEventError("event \(i): \(error)") }
    }
  }

  static func tripJSON(_ bridge: BeaconBridge, _ tripId: String) async -> JSONValue {
    await bridge.status.trips.first(where: { $0.tripId == tripId })?.json ?? .null
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
        </signal>
      </interface>
    </node>
    """
}
