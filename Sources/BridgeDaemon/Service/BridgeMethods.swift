import BeaconCore
import BeaconCrypto
import DBus
import FoundationEssentials
import GZone

#if canImport(Glibc)
  import Glibc
#endif

/// The methods of `org.beaconbridge.Bridge1` (docs/dbus-api.md), one function each, over the
/// bridge, the store and what the service reads besides. `BridgeService.handle` finds the
/// function (`method(_:)`) and turns what it throws into a D-Bus error.
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
    switch member {
    case BridgeServiceNames.Method.status: status
    case BridgeServiceNames.Method.pairings: pairings
    case BridgeServiceNames.Method.recentLogs: recentLogs
    case BridgeServiceNames.Method.pair: pair
    case BridgeServiceNames.Method.unpair: unpair
    case BridgeServiceNames.Method.pairWithKey: pairWithKey
    case BridgeServiceNames.Method.tripStart: tripStart
    case BridgeServiceNames.Method.tripEvents: tripEvents
    case BridgeServiceNames.Method.tripEnd: tripEnd
    case BridgeServiceNames.Method.tripRetry: tripRetry
    case BridgeServiceNames.Method.tripAssign: tripAssign
    case BridgeServiceNames.Method.gzoneRefresh: gzoneRefresh
    default: nil
    }
  }

  /// A call's arguments, read by position; a missing or mistyped one is nil.
  struct Arguments: Sendable {
    let values: [DBusValue]
    /// The caller's unique name, when the call came over a bus.
    let sender: BusName?
    init(_ values: [DBusValue], sender: BusName? = nil) {
      self.values = values
      self.sender = sender
    }
    func string(_ i: Int) -> String? { i < values.count ? values[i].string : nil }
    func int(_ i: Int) -> Int? { i < values.count ? values[i].int : nil }

    /// A trip ID argument, built once by its validated type.
    func tripID(_ i: Int, _ signature: String) -> Result<TripID, DBusError> {
      guard let text = string(i) else { return .failure(DBusError(.invalidArgs, signature)) }
      do { return .success(try TripID(text)) } catch {
        return .failure(DBusError(.invalidArgs, error.description))
      }
    }

    /// A device ID argument, built once by its validated type.
    func deviceID(_ i: Int, _ signature: String) -> Result<DeviceID, DBusError> {
      guard let text = string(i) else { return .failure(DBusError(.invalidArgs, signature)) }
      do { return .success(try DeviceID(text)) } catch {
        return .failure(DBusError(.invalidArgs, error.description))
      }
    }
  }

  /// A call whose arguments are wrong: the standard `org.freedesktop.DBus.Error.InvalidArgs`, with
  /// the sentence the CLI would print for the same value (the identifier types' messages).
  static func invalidArgs(_ message: String) -> MethodResult {
    .failure(DBusError(.invalidArgs, message))
  }

  func status(_: Arguments) async throws -> MethodResult {
    let outbox = try? await store.outboxSummary()
    var json = await bridge.status.json(
      scan: state.scan, outbox: outbox, droppedAdvertisements: state.scanStatus.droppedAdvertisements,
      manufacturerDataOverLimit: state.scanStatus.manufacturerDataOverLimit)
    if let fleet = state.fleet, case .object(var fields) = json {
      fields["fleet"] = fleet.current.json
      json = .object(fields)
    }
    return .success([.string(json.compactText)])
  }

  func pairings(_: Arguments) async throws -> MethodResult {
    .success([.string(JSONValue.array(try await store.pairingsWithSource()).compactText)])
  }

  func recentLogs(_: Arguments) async throws -> MethodResult {
    .success([.string(JSONValue.array(logger.recent.map { .string($0) }).compactText)])
  }

  func pair(_ args: Arguments) async throws -> MethodResult {
    guard let uuidText = args.string(0), let major = args.int(1), let minor = args.int(2),
      let deviceText = args.string(3)
    else {
      return Self.invalidArgs("Pair takes (s uuid, i major, i minor, s deviceId, s label); -1 = any")
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
      let label = args.string(4).flatMap { $0.isEmpty ? nil : $0 }
      if let label { try PairingLabel.check(label) }
      pairing = Pairing(identity: identity, deviceId: try DeviceID(deviceText), label: label)
    } catch let error as IdentifierError {
      return Self.invalidArgs(error.description)
    }
    try await store.pair(pairing)
    try await reloadPairings()
    return .success([])
  }

  /// (s scheme "eid"|"rpa", s key: 32 hex digits, i K, x beacon clock now, s deviceId, s label);
  /// K and the clock are -1 for "rpa". The reply is the pairing as `Pairings` lists it: no key.
  /// No error repeats the key.
  func pairWithKey(_ args: Arguments) async throws -> MethodResult {
    let signature =
      "PairWithKey takes (s scheme, s key, i rotationExponent, x beaconClock, s deviceId, s label)"
    // The bus policy lets only root call this; the daemon asks the bus who the caller is as well,
    // so that a policy file missing or edited does not open the keys to every user.
    guard let sender = args.sender, let uid = await callerUID(sender), uid == 0 || uid == getuid() else {
      return .failure(
        DBusError(.accessDenied, "PairWithKey is for root only: run 'beaconbridge pair' with sudo"))
    }
    guard let schemeText = args.string(0), let keyText = args.string(1), let k = args.int(2),
      let clock = args.int(3), let deviceText = args.string(4)
    else { return Self.invalidArgs(signature) }
    guard let scheme = KeyedIdentity.Scheme(rawValue: schemeText) else {
      return Self.invalidArgs("scheme must be eid or rpa, not \(schemeText.quotedForMessage)")
    }
    var digits = Array(keyText.utf8).map { $0 | 0x20 }
    defer { digits.withUnsafeMutableBytes { SecretBytes.wipe($0) } }
    guard digits.count == 32, digits.allSatisfy(PairingKeyFile.isLowerHexDigit) else {
      return Self.invalidArgs("key must be 32 hex digits (16 bytes)")
    }
    let deviceId: DeviceID
    let label = args.string(5).flatMap { $0.isEmpty ? nil : $0 }
    do throws(IdentifierError) {
      deviceId = try DeviceID(deviceText)
      if let label { try PairingLabel.check(label) }
    } catch {
      return Self.invalidArgs(error.description)
    }
    var exponent: UInt8?
    var offset: Int64?
    if scheme == .eid {
      guard (0...15).contains(k) else { return Self.invalidArgs("rotationExponent must be 0 to 15") }
      guard (0...Int(UInt32.max)).contains(clock) else {
        return Self.invalidArgs("beaconClock must be 0 to 4294967295")
      }
      exponent = UInt8(k)
      offset = Int64(clock) - Int64(Date().timeIntervalSince1970.rounded(.down))
    }
    let stored = try await store.pairByKey(
      scheme: scheme, key: digits, rotationExponent: exponent, clockOffset: offset, deviceId: deviceId,
      label: label)
    try await reloadPairings()
    return .success([.string(stored.pairing.json.compactText)])
  }

  func unpair(_ args: Arguments) async throws -> MethodResult {
    let deviceId: DeviceID
    switch args.deviceID(0, "Unpair takes (s deviceId)") {
    case .success(let id): deviceId = id
    case .failure(let error): return .failure(error)
    }
    let removed = try await store.unpair(deviceId: deviceId.rawValue)
    try await reloadPairings()
    return .success([.uint32(UInt32(removed))])
  }

  func tripStart(_ args: Arguments) async throws -> MethodResult {
    let tripId: TripID
    switch args.tripID(0, "TripStart takes (s tripId)") {
    case .success(let id): tripId = id
    case .failure(let error): return .failure(error)
    }
    try await bridge.tripStart(tripId)
    return .success([.string(await tripJSON(tripId.rawValue).compactText)])
  }

  func tripEvents(_ args: Arguments) async throws -> MethodResult {
    let signature = "TripEvents takes (s tripId, s eventsJSONArray)"
    let tripId: TripID
    switch args.tripID(0, signature) {
    case .success(let id): tripId = id
    case .failure(let error): return .failure(error)
    }
    guard let text = args.string(1) else { return Self.invalidArgs(signature) }
    // The CLI's cap, checked on the length before any decoding (`TripEventBatch.maximumJSONBytes`).
    if let refusal = TripEventBatch.refusal(jsonBytes: text.utf8.count) { return Self.invalidArgs(refusal) }
    let events: [TripEvent]
    do { events = try Self.parseEvents(text) } catch { return Self.invalidArgs("\(error)") }
    try await bridge.tripEvents(tripId, events: events)
    return .success([.uint32(UInt32(events.count))])
  }

  func tripEnd(_ args: Arguments) async throws -> MethodResult {
    let tripId: TripID
    switch args.tripID(0, "TripEnd takes (s tripId)") {
    case .success(let id): tripId = id
    case .failure(let error): return .failure(error)
    }
    let before = await tripJSON(tripId.rawValue)
    try await bridge.tripEnd(tripId)
    let after = await tripJSON(tripId.rawValue)
    return .success([.string((after == .null ? before : after).compactText)])
  }

  func tripRetry(_ args: Arguments) async throws -> MethodResult {
    var trip: String?
    if let text = args.string(0), !text.isEmpty {
      switch args.tripID(0, "TripRetry takes (s tripId)") {
      case .success(let id): trip = id.rawValue
      case .failure(let error): return .failure(error)
      }
    }
    // Dead letters go through the bridge's posting lane and upload state, as every post does.
    let retried = try await store.retryDeadLetters(tripId: trip) { try await bridge.retryDeadLetter($0) }
    return .success([.string(retried.json.compactText)])
  }

  func tripAssign(_ args: Arguments) async throws -> MethodResult {
    let signature = "TripAssign takes (s tripId, s deviceId)"
    let tripId: TripID
    let deviceId: DeviceID
    switch args.tripID(0, signature) {
    case .success(let id): tripId = id
    case .failure(let error): return .failure(error)
    }
    switch args.deviceID(1, signature) {
    case .success(let id): deviceId = id
    case .failure(let error): return .failure(error)
    }
    try await bridge.assign(tripId, deviceId: deviceId)
    return .success([])
  }

  func gzoneRefresh(_: Arguments) async throws -> MethodResult {
    guard let gzone = state.gzone else {
      return BridgeService.error("NotConfigured", GZonePollerError.notConfigured.description)
    }
    let refreshed: GZonePoller.Refresh
    do { refreshed = try await gzone.refresh(reason: "asked over D-Bus") } catch {
      return BridgeService.error(error == .notConfigured ? "NotConfigured" : "Failed", error.description)
    }
    return .success([.string(refreshed.jsonText)])
  }

  /// After Pair/Unpair: the store is the truth; the selector and the pruning filter follow it.
  func reloadPairings() async throws {
    let all = try await store.pairings()
    state.setPairings(all)
    await bridge.setPairings(all)
    try await KeyAuthenticator.refresh(
      bridge: bridge, store: store, eidClockTolerance: bridge.host.configuration.eidClockTolerance)
  }

  /// A JSON array of event objects, each with a string `type`, each keeping its text.
  static func parseEvents(_ text: String) throws -> [TripEvent] {
    try TripEvent.batch(fromJSON: Array(text.utf8))
  }

  func tripJSON(_ tripId: String) async -> JSONValue {
    await bridge.status.trips.first(where: { $0.tripId == tripId })?.json ?? .null
  }
}
