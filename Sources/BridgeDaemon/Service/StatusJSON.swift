import BeaconCore

/// JSON forms of the bridge's state, shared by the D-Bus API and `status --json`.
extension BridgeStatus {
  /// `scanning` names the backend while it scans (null otherwise); `scan` says what it does;
  /// `droppedAdvertisements` counts what the BlueZ source read but dropped while the bridge
  /// held a batch past its read-ahead bound, `manufacturerDataOverLimit` the ManufacturerData
  /// and ServiceData entries past a device's 32 that it left out.
  public func json(
    scan: ScanCondition, outbox: OutboxSummary?, droppedAdvertisements: Int = 0,
    manufacturerDataOverLimit: Int = 0
  ) -> JSONValue {
    var fields: [String: JSONValue] = [
      "armed": .bool(armed),
      "scanning": scan.scanningBackend.map { .string($0) } ?? .null,
      "scan": scan.json,
      "beaconsInRange": .array(beaconsInRange.map { $0.statusJSON(health: health[$0.id], now: now) }),
      "activeBeacon": active.map(\.statusJSON) ?? .null,
      "trips": .array(trips.map(\.json)),
      "outboundBatches": .int(Int64(outboundBatches)),
      "pairings": .int(Int64(pairings.count)),
      "pairedBeacons": .array(pairedBeacons.map { $0.statusJSON(now: now) }),
      "ignoredFrames": .object(ignoredFrames.mapValues { .int(Int64($0)) }),
      "upload": upload.json(now: now),
      "authentication": .object([
        "plainPairings": .int(Int64(pairings.count { $0.key == nil })),
        "keyPairings": .int(Int64(pairings.count { $0.key != nil })),
        "eidReplaysRefused": .int(Int64(eidReplaysRefused)),
      ]),
      "droppedAdvertisements": .int(Int64(droppedAdvertisements)),
      "manufacturerDataOverLimit": .int(Int64(manufacturerDataOverLimit)),
    ]
    if let outbox { fields["outbox"] = outbox.json }
    return .object(fields)
  }
}

extension UploadState {
  /// `state` is `idle` (nothing posted yet), `delivering` (the last post went through) or
  /// `failing` (the last post failed; `lastError` is the sink's reason, `retryInSeconds` when the
  /// next attempt is due). docs/dbus-api.md, "Output fields".
  public func json(now: Timestamp) -> JSONValue {
    func ago(_ time: Timestamp?) -> JSONValue {
      time.map { .double((max(0, now - $0) * 10).rounded() / 10) } ?? .null
    }
    let state = consecutiveFailures > 0 ? "failing" : lastDeliveredAt == nil ? "idle" : "delivering"
    return .object([
      "state": .string(state), "delivered": .int(Int64(delivered)),
      "deadLettered": .int(Int64(deadLettered)),
      "consecutiveFailures": .int(Int64(consecutiveFailures)),
      "lastError": lastError.map { .string($0) } ?? .null,
      "lastDeliveredAgoSeconds": ago(lastDeliveredAt), "lastFailedAgoSeconds": ago(lastFailedAt),
      "retryInSeconds": retryAt.map { .double((max(0, $0 - now) * 10).rounded() / 10) } ?? .null,
    ])
  }
}

extension BridgeStatus.Trip {
  /// One trip, as `status` lists it and the trip calls answer.
  public var json: JSONValue {
    .object([
      "tripId": .string(tripId), "ended": .bool(endedAt != nil),
      "deviceId": resolution.deviceId.map { .string($0) } ?? .null,
      "resolution": .string(resolution.reason),
      "authentication": resolution.snapshot.map { .string($0.id.authentication.rawValue) } ?? .null,
      "heldBatches": .int(Int64(heldBatches)),
      "waitingForEnd": .int(Int64(waitingForEnd)),
    ])
  }
}

extension OutboxSummary {
  /// The outbox's counts, as `status` and the support bundle show them.
  public var json: JSONValue {
    .object([
      "undelivered": .int(Int64(undelivered)), "deadLetters": .int(Int64(deadLetters)),
      "unresolvedTrips": .int(Int64(unresolvedTrips)), "limit": .int(Int64(limit)),
      "oldestAgeSeconds": oldestAge.map { .double($0.rounded()) } ?? .null,
    ])
  }

  /// The counts and why each dead letter was refused, as the support bundle's `outbox.json`.
  public func json(deadLetters: [(key: String, reason: String)]) -> JSONValue {
    guard case .object(var fields) = json else { return json }
    fields["deadLetterReasons"] = .array(deadLetters.map(Self.deadLetterJSON))
    return .object(fields)
  }

  /// A refused batch, `{"key", "reason"}`, as `TripRetry` answers and the bundle lists it.
  static func deadLetterJSON(key: String, reason: String) -> JSONValue {
    .object(["key": .string(key), "reason": .string(reason)])
  }
}

extension PairedBeaconStatus {
  /// One paired beacon with its health (docs/dbus-api.md, "Beacon health").
  func statusJSON(now: Timestamp) -> JSONValue {
    var fields: [String: JSONValue] = [
      "deviceId": .string(pairing.deviceId), "label": pairing.label.map { .string($0) } ?? .null,
      "inRange": .bool(inRange),
      "lastSeenAgoSeconds": lastSeen.map { .double((max(0, now - $0) * 10).rounded() / 10) } ?? .null,
      "rssi": lastRSSI.map { .int(Int64($0)) } ?? .null,
      "smoothedRssi": smoothedRSSI.map { .double(($0 * 10).rounded() / 10) } ?? .null,
      "packetLoss": packetLoss.map { .double(($0 * 1000).rounded() / 1000) } ?? .null,
      "lastRebootAgoSeconds": health.lastRebootAt.map { .double((max(0, now - $0) * 10).rounded() / 10) }
        ?? .null,
    ]
    for (key, value) in id.jsonFields { fields[key] = value }
    for (key, value) in id.calibrationFields(powerAt1m: powerAt1m) { fields[key] = value }
    for (key, value) in health.jsonFields(now: now) { fields[key] = value }
    return .object(fields)
  }
}

extension TrackedBeacon {
  func statusJSON(health: BeaconHealth?, now: Timestamp) -> JSONValue {
    var fields: [String: JSONValue] = [
      "address": .string(address.description), "sightings": .int(Int64(sightings)),
      "proximity": .string(proximity.rawValue),
    ]
    for (key, value) in id.jsonFields { fields[key] = value }
    for (key, value) in id.calibrationFields(powerAt1m: powerAt1m) { fields[key] = value }
    for (key, value) in (health ?? BeaconHealth()).jsonFields(now: now) { fields[key] = value }
    if let rssi = lastRSSI { fields["rssi"] = .int(Int64(rssi)) }
    if let smoothed = smoothedRSSI { fields["smoothedRssi"] = .double((smoothed * 10).rounded() / 10) }
    if let distance { fields["distance"] = .double((distance * 100).rounded() / 100) }
    return .object(fields)
  }
}

extension ActiveBeacon {
  var statusJSON: JSONValue {
    var fields: [String: JSONValue] = [
      "deviceId": .string(deviceId), "label": pairing.label.map { .string($0) } ?? .null,
    ]
    for (key, value) in id.jsonFields { fields[key] = value }
    if let smoothed = smoothedRSSI { fields["smoothedRssi"] = .double((smoothed * 10).rounded() / 10) }
    return .object(fields)
  }
}

extension Pairing {
  /// A pairing by key shows how it is proven and its number (`pairing`), never its key.
  public var json: JSONValue {
    var fields: [String: JSONValue] = [
      "uuid": key == nil ? .string(uuid.uuidString) : .null, "major": major.map { .int(Int64($0)) } ?? .null,
      "minor": minor.map { .int(Int64($0)) } ?? .null, "deviceId": .string(deviceId),
      "label": label.map { .string($0) } ?? .null, "authentication": .string(authentication.rawValue),
    ]
    if let key { fields["pairing"] = .int(key.pairing) }
    return .object(fields)
  }
}
