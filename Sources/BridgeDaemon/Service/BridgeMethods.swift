import BeaconCore
import DBus
import FoundationEssentials
import GZone

#if canImport(Glibc)
  import Glibc
#endif

/// The methods of `org.beaconbridge.Bridge1` (docs/dbus-api.md), one function each, over the
/// bridge, the store and what the service reads besides. Each acts on a call whose arguments
/// `BridgeRequest.parse` checked. `BridgeService.handle` finds the function (`method(_:)`) and
/// turns what it throws into a D-Bus error.
struct BridgeMethods: Sendable {
  let bridge: BeaconBridge
  let store: Store
  let state: BridgeServiceContext
  let logger: DaemonLogger
  /// The user a caller runs as, asked of the bus; nil when it cannot tell.
  let callerUID: @Sendable (BusName) async -> UInt32?

  typealias Method = @Sendable (Arguments) async throws -> MethodResult

  /// The function for a member of Bridge1, or nil when Bridge1 has no such method.
  func method(_ member: MemberName) -> Method? {
    guard BridgeServiceNames.Method.all.contains(member) else { return nil }
    return { args in try await call(member, args) }
  }

  /// A call's arguments as they came, and who sent them.
  struct Arguments: Sendable {
    let values: [DBusValue]
    /// The caller's unique name, when the call came over a bus.
    let sender: BusName?
    init(_ values: [DBusValue], sender: BusName? = nil) {
      self.values = values
      self.sender = sender
    }
  }

  /// Checks the arguments (`BridgeRequest.parse`: a refusal is `InvalidArgs` with its sentence),
  /// then does what they ask.
  func call(_ member: MemberName, _ args: Arguments) async throws -> MethodResult {
    // The bus policy lets only root call PairWithKey; the daemon asks the bus who the caller is
    // as well, so that a policy file missing or edited does not open the keys to every user.
    // Before the arguments are read: another caller learns nothing of how its key would fare.
    if member == BridgeServiceNames.Method.pairWithKey {
      guard let sender = args.sender, let uid = await callerUID(sender), uid == 0 || uid == getuid() else {
        return .failure(
          DBusError(.accessDenied, "PairWithKey is for root only: run 'beaconbridge pair' with sudo"))
      }
    }
    // Trip events count against the bytes committed at once from before they are decoded.
    if member == BridgeServiceNames.Method.tripEvents, case .string(let text)? = args.values.dropFirst().first
    {
      let bytes = text.utf8.count
      if let refusal = TripEventsBudget.shared.reserve(bytes) {
        return BridgeService.error("Refused", refusal)
      }
      defer { TripEventsBudget.shared.release(bytes) }
      switch BridgeRequest.parse(member: member, args.values) {
      case .failure(let error): return .failure(error)
      case .success(let request): return try await perform(request)
      }
    }
    switch BridgeRequest.parse(member: member, args.values) {
    case .failure(let error): return .failure(error)
    case .success(let request): return try await perform(request)
    }
  }

  /// Does what a checked call asks.
  func perform(_ request: BridgeRequest) async throws -> MethodResult {
    switch request {
    case .status: try await status()
    case .pairings: try await pairings()
    case .recentLogs: recentLogs()
    case .pair(let pairing): try await pair(pairing)
    case .pairWithKey(let request): try await pairWithKey(request)
    case .unpair(let deviceId): try await unpair(deviceId)
    case .tripStart(let tripId): try await tripStart(tripId)
    case .tripEvents(let tripId, let events): try await tripEvents(tripId, events)
    case .tripEnd(let tripId): try await tripEnd(tripId)
    case .tripRetry(let tripId): try await tripRetry(tripId)
    case .tripAssign(let tripId, let deviceId): try await tripAssign(tripId, deviceId)
    case .gzoneRefresh: await gzoneRefresh()
    }
  }

  func status() async throws -> MethodResult {
    let outbox = try? await store.outboxSummary()
    let status = await bridge.status
    let text = StatusDocument(
      status, scan: state.scan, outbox: outbox,
      droppedAdvertisements: state.scanStatus.droppedAdvertisements,
      manufacturerDataOverLimit: state.scanStatus.manufacturerDataOverLimit, fleet: state.fleet?.current,
      fleetSetAside: try? await store.fleetSetAside()
    ).json.compactText
    // The document of many beacons is thousands of small blocks, freed by now; handed back, or
    // they stay in the heap's free lists and count in RSS (1,000 beacons: about half a megabyte).
    if status.beaconsInRange.count >= 256 { MallocTuning.returnFreedMemory() }
    return .success([.string(text)])
  }

  func pairings() async throws -> MethodResult {
    .success([.string(JSONValue.array(try await store.pairingsWithSource().map(\.json)).compactText)])
  }

  func recentLogs() -> MethodResult {
    .success([.string(JSONValue.array(logger.recent.map { .string($0) }).compactText)])
  }

  func pair(_ pairing: Pairing) async throws -> MethodResult {
    try await store.pair(pairing)
    try await reloadPairings()
    return .success([])
  }

  /// The reply is the pairing as `Pairings` lists it: no key. The key's digits are wiped once
  /// the request goes (`BridgeRequest.KeyDigits`), whether the store took them or refused.
  func pairWithKey(_ request: BridgeRequest.KeyPairingRequest) async throws -> MethodResult {
    let offset = request.beaconClock.map { Int64($0) - Int64(Date().timeIntervalSince1970.rounded(.down)) }
    let stored = try await store.pairByKey(
      scheme: request.scheme, key: request.key.bytes, rotationExponent: request.rotationExponent,
      clockOffset: offset, deviceId: request.deviceId, label: request.label,
      eidClockTolerance: bridge.host.configuration.eidClockTolerance)
    try await reloadPairings()
    return .success([.string(stored.pairing.json.compactText)])
  }

  func unpair(_ deviceId: DeviceID) async throws -> MethodResult {
    let removed = try await store.unpair(deviceId: deviceId)
    try await reloadPairings()
    return .success([.uint32(UInt32(removed))])
  }

  func tripStart(_ tripId: TripID) async throws -> MethodResult {
    try await bridge.tripStart(tripId)
    return .success([.string(await tripJSON(tripId).compactText)])
  }

  func tripEvents(_ tripId: TripID, _ events: [TripEvent]) async throws -> MethodResult {
    try await bridge.tripEvents(tripId, events: events)
    return .success([.uint32(UInt32(events.count))])
  }

  func tripEnd(_ tripId: TripID) async throws -> MethodResult {
    let before = await tripJSON(tripId)
    try await bridge.tripEnd(tripId)
    let after = await tripJSON(tripId)
    return .success([.string((after == .null ? before : after).compactText)])
  }

  func tripRetry(_ tripId: TripID?) async throws -> MethodResult {
    // Dead letters go through the bridge's posting lane and upload state, as every post does.
    let retried = try await store.retryDeadLetters(tripId: tripId) {
      try await bridge.retryDeadLetter($0)
    }
    return .success([.string(retried.json.compactText)])
  }

  func tripAssign(_ tripId: TripID, _ deviceId: DeviceID) async throws -> MethodResult {
    try await bridge.assign(tripId, deviceId: deviceId)
    return .success([])
  }

  func gzoneRefresh() async -> MethodResult {
    guard let gzone = state.gzone else {
      return BridgeService.error("NotConfigured", GZonePollerError.notConfigured.description)
    }
    let refreshed: GZonePoller.Refresh
    do { refreshed = try await gzone.refresh(reason: "asked over D-Bus") } catch {
      return BridgeService.error(error == .notConfigured ? "NotConfigured" : "Failed", error.description)
    }
    return .success([.string(refreshed.jsonText)])
  }

  /// After Pair/Unpair: the store is the truth; the selector, the pruning filter and the keys
  /// follow it (`PairingBook`).
  func reloadPairings() async throws {
    try await state.book.refresh()
  }

  func tripJSON(_ tripId: TripID) async -> JSONValue {
    await bridge.status.trips.first(where: { $0.tripId == tripId }).map { StatusDocument.Trip($0).json }
      ?? .null
  }
}
