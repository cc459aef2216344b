/// What the bridge reports, in order, with the time it happened.
public enum BridgeEvent: Hashable, Sendable {
  case beaconEntered(TrackedBeacon)
  case beaconExited(TrackedBeacon, ExitReason)
  case activeBeaconChanged(ActiveBeacon?)
  case tripStarted(tripId: String)
  /// A trip got its device ID, or was found unresolved (`deviceId` nil).
  case tripTagged(tripId: String, TripResolution)
  /// A batch waits for its trip's device ID.
  case batchHeld(TripEventBatch, reason: String)
  /// `ScopeHost.postTripEventBatch` accepted a batch.
  case batchPosted(TaggedTripBatch)
  /// `ScopeHost.postTripEventBatch` threw; the batch stays queued and is retried.
  case batchPostFailed(TaggedTripBatch, error: String, retryIn: Double)
  /// The backend refused a batch for good; it moved to the dead letters.
  case batchDeadLettered(TaggedTripBatch, reason: String)
  case tripEnded(tripId: String, TripResolution)
  /// Malformed input, reported instead of crashing.
  case rejected(address: BluetoothAddress?, FrameRejection)
  /// An Eddystone-TLM frame, linked to the beacon heard from its address (or to none yet).
  case telemetry(TelemetryReport)
  /// An Eddystone-URL heard from an address for the first time, or changed; `ids` are the
  /// beacons heard from that address within the link window.
  case eddystoneURL(address: BluetoothAddress, EddystoneURLFrame, ids: [BeaconID])
  /// A paired beacon crossed a health threshold (D-Bus signal `BeaconHealth`).
  case beaconHealth(HealthChange)

  /// The contract's `type` field.
  public var type: String {
    switch self {
    case .beaconEntered: "beaconEntered"
    case .beaconExited: "beaconExited"
    case .activeBeaconChanged: "activeBeaconChanged"
    case .tripStarted: "tripStarted"
    case .tripTagged: "tripTagged"
    case .batchHeld: "batchHeld"
    case .batchPosted: "batchPosted"
    case .batchPostFailed: "batchPostFailed"
    case .batchDeadLettered: "batchDeadLettered"
    case .tripEnded: "tripEnded"
    case .rejected: "rejected"
    case .telemetry: "telemetry"
    case .eddystoneURL: "eddystoneURL"
    case .beaconHealth: "beaconHealth"
    }
  }
}

/// A bridge event and when it happened.
public struct TimedBridgeEvent: Hashable, Sendable {
  public var at: Timestamp
  public var event: BridgeEvent

  public init(at: Timestamp, event: BridgeEvent) {
    self.at = at
    self.event = event
  }

  /// One line of `simulate`/`replay` output (docs/DESIGN.md, Contracts): `at` and `type` first, then the
  /// event's fields in a fixed order.
  public var jsonLine: String {
    var fields: [(key: String, value: JSONValue)] = [
      ("at", .double(at.seconds)), ("type", .string(event.type)),
    ]
    fields += event.jsonFields
    var out = ""
    JSONWriter.writeObject(fields, to: &out)
    return out
  }
}

extension BeaconID {
  /// uuid/major/minor for iBeacon and AltBeacon; namespace/instance for Eddystone-UID; the
  /// pairing's number for a pairing by key; then how the identity was proven (`authentication`).
  public var jsonFields: [(key: String, value: JSONValue)] {
    let proof: (key: String, value: JSONValue) = ("authentication", .string(authentication.rawValue))
    switch self {
    case .iBeacon(let i), .altBeacon(let i):
      return [
        ("kind", .string(kind)), ("uuid", .string(i.uuid.uuidString)), ("major", .int(Int64(i.major))),
        ("minor", .int(Int64(i.minor))), proof,
      ]
    case .eddystone(let ns, let inst):
      return [
        ("kind", .string(kind)), ("uuid", .null), ("major", .null), ("minor", .null),
        ("namespace", .string(Hex.encode(ns))), ("instance", .string(Hex.encode(inst))), proof,
      ]
    case .keyed(let k):
      return [
        ("kind", .string(kind)), ("uuid", .null), ("major", .null), ("minor", .null),
        ("pairing", .int(k.pairing)), proof,
      ]
    }
  }
}

extension JSONValue {
  init(_ value: Int?) { self = value.map { .int(Int64($0)) } ?? .null }
  init(_ value: Double?) { self = value.map { .double(($0 * 10).rounded() / 10) } ?? .null }
  init(_ value: String?) { self = value.map { .string($0) } ?? .null }
}

extension BeaconID {
  /// The frame's own calibration, as the frame carries it: `measuredPower` (dBm at 1 m) for
  /// iBeacon and AltBeacon (its reference RSSI), `txPower` (dBm at 0 m) for Eddystone; the other
  /// null. `powerAt1m` is Eddystone's Tx power less 41 dB (`BeaconFrame.powerAt1m`).
  public func calibrationFields(powerAt1m: Int?) -> [(key: String, value: JSONValue)] {
    switch self {
    case .iBeacon, .altBeacon: [("measuredPower", JSONValue(powerAt1m)), ("txPower", .null)]
    case .keyed(let k) where k.scheme == .rpa: [("measuredPower", JSONValue(powerAt1m)), ("txPower", .null)]
    case .eddystone, .keyed: [("measuredPower", .null), ("txPower", JSONValue(powerAt1m.map { $0 + 41 }))]
    }
  }
}

extension TrackedBeacon {
  var jsonFields: [(key: String, value: JSONValue)] {
    id.jsonFields + [
      ("rssi", JSONValue(lastRSSI)), ("smoothedRssi", JSONValue(smoothedRSSI)),
      ("distance", JSONValue(distance)),
      ("proximity", .string(proximity.rawValue)), ("address", .string(address.description)),
    ] + id.calibrationFields(powerAt1m: powerAt1m)
  }
}

extension Telemetry {
  /// The TLM fields (docs/dbus-api.md, "Beacon health"): `batteryMv`, `temperatureC`,
  /// `advertisingCount`, `uptimeSeconds`.
  public var jsonFields: [(key: String, value: JSONValue)] {
    [
      ("batteryMv", JSONValue(batteryMillivolts)),
      ("temperatureC", temperature.map { .double(($0 * 100).rounded() / 100) } ?? .null),
      ("advertisingCount", .int(Int64(advertisingCount))), ("uptimeSeconds", .double(uptime)),
    ]
  }
}

extension BeaconID? {
  /// The identity fields, or the same keys null when no beacon is linked.
  var jsonFieldsOrNull: [(key: String, value: JSONValue)] {
    switch self {
    case .some(let id): id.jsonFields
    case .none:
      [("kind", .null), ("uuid", .null), ("major", .null), ("minor", .null), ("authentication", .null)]
    }
  }
}

extension HealthChange {
  public var jsonFields: [(key: String, value: JSONValue)] {
    [("change", .string(kind.rawValue)), ("deviceId", .string(deviceId))] + id.jsonFields
      + health.jsonFields
  }
}

extension BeaconHealth {
  /// What a beacon said about itself (docs/dbus-api.md, "Beacon health"); `now` gives the
  /// telemetry's age.
  public func jsonFields(now: Timestamp? = nil) -> [(key: String, value: JSONValue)] {
    var out: [(key: String, value: JSONValue)] =
      telemetry?.jsonFields ?? [
        ("batteryMv", .null), ("temperatureC", .null), ("advertisingCount", .null), ("uptimeSeconds", .null),
      ]
    if let now {
      out.append(("telemetryAgeSeconds", JSONValue(telemetry.map { max(0, now - $0.heardAt) })))
    }
    out += [
      ("url", JSONValue(url)), ("reboots", .int(Int64(reboots))), ("batteryLow", .bool(batteryLow)),
      ("silent", .bool(silent)), ("possibleClone", .bool(possibleClone)),
      ("cloneAddresses", .array(cloneAddresses.map { .string($0.description) })),
    ]
    return out
  }

  public var jsonFields: [(key: String, value: JSONValue)] { jsonFields(now: nil) }
}

extension TripResolution {
  var jsonFields: [(key: String, value: JSONValue)] {
    var out: [(key: String, value: JSONValue)] = [("deviceId", JSONValue(deviceId))]
    if let s = snapshot {
      out += s.id.jsonFields
      out += [
        ("rssi", JSONValue(s.lastRSSI)), ("smoothedRssi", JSONValue(s.smoothedRSSI)),
        ("label", JSONValue(s.label)),
      ]
    } else {
      out += [
        ("uuid", .null), ("major", .null), ("minor", .null), ("authentication", .null), ("rssi", .null),
      ]
    }
    out.append(("resolution", .string(reason)))
    return out
  }
}

extension BridgeEvent {
  var jsonFields: [(key: String, value: JSONValue)] {
    switch self {
    case .beaconEntered(let b):
      return b.jsonFields
    case .beaconExited(let b, let reason):
      return b.jsonFields + [("reason", .string(reason.rawValue))]
    case .activeBeaconChanged(let active):
      guard let a = active else { return [("deviceId", .null)] }
      return [("deviceId", .string(a.deviceId))] + a.id.jsonFields + [
        ("rssi", JSONValue(a.lastRSSI)), ("smoothedRssi", JSONValue(a.smoothedRSSI)),
        ("label", JSONValue(a.pairing.label)),
      ]
    case .tripStarted(let tripId):
      return [("tripId", .string(tripId))]
    case .tripTagged(let tripId, let resolution):
      return [("tripId", .string(tripId))] + resolution.jsonFields
    case .batchHeld(let batch, let reason):
      return [
        ("tripId", .string(batch.tripId)), ("sequence", .int(Int64(batch.sequence))),
        ("events", .int(Int64(batch.events.count))), ("reason", .string(reason)),
      ]
    case .batchPosted(let tagged):
      return [
        ("tripId", .string(tagged.tripId)), ("deviceId", .string(tagged.deviceId)),
        ("events", .int(Int64(tagged.events.count))), ("sequence", .int(Int64(tagged.sequence))),
        ("resolution", .string(tagged.resolution.reason)),
        ("eventTypes", .array(tagged.events.map { .string($0.type) })),
      ]
    case .batchPostFailed(let tagged, let error, let retryIn):
      return [
        ("tripId", .string(tagged.tripId)), ("sequence", .int(Int64(tagged.sequence))),
        ("error", .string(error)),
        ("retryIn", .double(retryIn)),
      ]
    case .batchDeadLettered(let tagged, let reason):
      return [
        ("tripId", .string(tagged.tripId)), ("sequence", .int(Int64(tagged.sequence))),
        ("deviceId", .string(tagged.deviceId)), ("reason", .string(reason)),
      ]
    case .tripEnded(let tripId, let resolution):
      return [
        ("tripId", .string(tripId)), ("resolved", .bool(resolution.isFinal)),
        ("deviceId", JSONValue(resolution.deviceId)),
        ("resolution", .string(resolution.reason)),
      ]
    case .telemetry(let report):
      return report.id.jsonFieldsOrNull + [("address", .string(report.telemetry.address.description))]
        + report.telemetry.jsonFields
    case .eddystoneURL(let address, let frame, let ids):
      return [
        ("address", .string(address.description)), ("url", .string(frame.url)),
        ("txPower", .int(Int64(frame.txPower))),
      ] + ids.first.jsonFieldsOrNull
    case .beaconHealth(let change):
      return change.jsonFields
    case .rejected(let address, let rejection):
      return [
        ("reason", .string(rejection.reason.rawValue)), ("detail", .string(rejection.detail)),
        ("address", JSONValue(address?.description)),
      ]
    }
  }
}
