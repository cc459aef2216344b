/// What the bridge reports, in order, with the time it happened.
public enum BridgeEvent: Hashable, Sendable {
  case beaconEntered(TrackedBeacon)
  case beaconExited(TrackedBeacon, ExitReason)
  case activeBeaconChanged(ActiveBeacon?)
  case tripStarted(tripId: TripID)
  /// A trip got its device ID, or was found unresolved (`deviceId` nil).
  case tripTagged(tripId: TripID, TripResolution)
  /// A batch waits for its trip's device ID.
  case batchHeld(TripEventBatch, reason: String)
  /// `ScopeHost.postTripEventBatch` accepted a batch.
  case batchPosted(TaggedTripBatch)
  /// `ScopeHost.postTripEventBatch` threw; the batch stays queued and is retried.
  case batchPostFailed(TaggedTripBatch, error: String, retryIn: Double)
  /// The backend refused a batch for good; it moved to the dead letters.
  case batchDeadLettered(TaggedTripBatch, reason: String)
  case tripEnded(tripId: TripID, TripResolution)
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

  /// One line of `simulate`/`replay`/`scan --json` output (docs/DESIGN.md, Contracts): `at` and
  /// `type` first, then the event's fields in a fixed order, each written by its reported type
  /// (`Output/`).
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

extension HealthChange {
  /// The `beaconHealth` event line's and the `BeaconHealth` signal's fields.
  public var fields: [(key: String, value: JSONValue)] {
    var w = FieldWriter<BridgeEvent.Key>()
    w.add(.change, .string(kind.rawValue))
    w.add(.deviceId, .string(deviceId.rawValue))
    w.merge(ReportedIdentity(id).fields)
    w.merge(ReportedHealth(health).fields(withAge: false))
    return w.fields
  }
}

extension BridgeEvent {
  /// The keys an event line has of its own; the beacons, snapshots and health in it write
  /// theirs.
  public enum Key: String {
    case tripId, deviceId, reason, sequence, events, error, retryIn, resolution, resolved, eventTypes
    case address, url, txPower, detail, change, rssi
  }

  /// A trip's resolution: the device ID, the snapshot's identity, signal and label (the same
  /// keys null but `kind` and `label` without one), and the reason.
  static func resolutionFields(_ resolution: TripResolution) -> [(key: String, value: JSONValue)] {
    var w = FieldWriter<Key>()
    w.add(.deviceId, .of(resolution.deviceId?.rawValue))
    if let s = resolution.snapshot {
      w.merge(ReportedSnapshot(s).signalFields)
    } else {
      w.merge(ReportedIdentity.unresolvedFields)
      w.add(.rssi, .null)
    }
    w.add(.resolution, .string(resolution.reason))
    return w.fields
  }

  var jsonFields: [(key: String, value: JSONValue)] {
    var w = FieldWriter<Key>()
    switch self {
    case .beaconEntered(let b):
      w.merge(ReportedBeacon(b).eventFields)
    case .beaconExited(let b, let reason):
      w.merge(ReportedBeacon(b).eventFields)
      w.add(.reason, .string(reason.rawValue))
    case .activeBeaconChanged(let active):
      w.merge(active.map { ReportedSnapshot($0).eventFields } ?? ReportedSnapshot.noneFields)
    case .tripStarted(let tripId):
      w.add(.tripId, .string(tripId.rawValue))
    case .tripTagged(let tripId, let resolution):
      w.add(.tripId, .string(tripId.rawValue))
      w.merge(Self.resolutionFields(resolution))
    case .batchHeld(let batch, let reason):
      w.add(.tripId, .string(batch.tripId.rawValue))
      w.add(.sequence, .of(batch.sequence))
      w.add(.events, .of(batch.events.count))
      w.add(.reason, .string(reason))
    case .batchPosted(let tagged):
      w.add(.tripId, .string(tagged.tripId.rawValue))
      w.add(.deviceId, .string(tagged.deviceId.rawValue))
      w.add(.events, .of(tagged.events.count))
      w.add(.sequence, .of(tagged.sequence))
      w.add(.resolution, .string(tagged.resolution.reason))
      w.add(.eventTypes, .array(tagged.events.map { .string($0.type) }))
    case .batchPostFailed(let tagged, let error, let retryIn):
      w.add(.tripId, .string(tagged.tripId.rawValue))
      w.add(.sequence, .of(tagged.sequence))
      w.add(.error, .string(error))
      w.add(.retryIn, .double(retryIn))
    case .batchDeadLettered(let tagged, let reason):
      w.add(.tripId, .string(tagged.tripId.rawValue))
      w.add(.sequence, .of(tagged.sequence))
      w.add(.deviceId, .string(tagged.deviceId.rawValue))
      w.add(.reason, .string(reason))
    case .tripEnded(let tripId, let resolution):
      w.add(.tripId, .string(tripId.rawValue))
      w.add(.resolved, .bool(resolution.isFinal))
      w.add(.deviceId, .of(resolution.deviceId?.rawValue))
      w.add(.resolution, .string(resolution.reason))
    case .telemetry(let report):
      w.merge(report.id.map { ReportedIdentity($0).fields } ?? ReportedIdentity.nullFields)
      w.add(.address, .string(report.telemetry.address.description))
      w.merge(ReportedHealth(telemetry: report.telemetry).telemetryFields)
    case .eddystoneURL(let address, let frame, let ids):
      w.add(.address, .string(address.description))
      w.add(.url, .string(frame.url))
      w.add(.txPower, .of(Int(frame.txPower)))
      w.merge(ids.first.map { ReportedIdentity($0).fields } ?? ReportedIdentity.nullFields)
    case .beaconHealth(let change):
      w.merge(change.fields)
    case .rejected(let address, let rejection):
      w.add(.reason, .string(rejection.reason.rawValue))
      w.add(.detail, .string(rejection.detail))
      w.add(.address, .of(address?.description))
    }
    return w.fields
  }
}
