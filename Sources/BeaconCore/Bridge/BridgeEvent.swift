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

  /// One line of `simulate`/`replay` output (DESIGN §4): `at` and `type` first, then the
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
  /// uuid/major/minor for iBeacon and AltBeacon; namespace/instance for Eddystone-UID.
  public var jsonFields: [(key: String, value: JSONValue)] {
    switch self {
    case .iBeacon(let i), .altBeacon(let i):
      [
        ("kind", .string(kind)), ("uuid", .string(i.uuid.uuidString)), ("major", .int(Int64(i.major))),
        ("minor", .int(Int64(i.minor))),
      ]
    case .eddystone(let ns, let inst):
      [
        ("kind", .string(kind)), ("uuid", .null), ("major", .null), ("minor", .null),
        ("namespace", .string(Hex.encode(ns))), ("instance", .string(Hex.encode(inst))),
      ]
    }
  }
}

extension JSONValue {
  init(_ value: Int?) { self = value.map { .int(Int64($0)) } ?? .null }
  init(_ value: Double?) { self = value.map { .double(($0 * 10).rounded() / 10) } ?? .null }
  init(_ value: String?) { self = value.map { .string($0) } ?? .null }
}

extension TrackedBeacon {
  var jsonFields: [(key: String, value: JSONValue)] {
    id.jsonFields + [
      ("rssi", JSONValue(lastRSSI)), ("smoothedRssi", JSONValue(smoothedRSSI)),
      ("distance", JSONValue(distance)),
      ("proximity", .string(proximity.rawValue)), ("address", .string(address.description)),
    ]
  }
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
      out += [("uuid", .null), ("major", .null), ("minor", .null), ("rssi", .null)]
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
    case .rejected(let address, let rejection):
      return [
        ("reason", .string(rejection.reason.rawValue)), ("detail", .string(rejection.detail)),
        ("address", JSONValue(address?.description)),
      ]
    }
  }
}
