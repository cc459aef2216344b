import BeaconCore

/// JSON forms of the bridge's state, shared by the D-Bus API and `status --json`.
extension BridgeStatus {
  /// `scanning` names the backend while it scans (null otherwise); `scan` says what it does.
  public func json(scan: ScanCondition, outbox: OutboxSummary?) -> JSONValue {
    var fields: [String: JSONValue] = [
      "armed": .bool(armed),
      "scanning": scan.scanningBackend.map { .string($0) } ?? .null,
      "scan": scan.json,
      "beaconsInRange": .array(beaconsInRange.map(\.statusJSON)),
      "activeBeacon": active.map(\.statusJSON) ?? .null,
      "trips": .array(
        trips.map { trip in
          .object([
            "tripId": .string(trip.tripId), "ended": .bool(trip.endedAt != nil),
            "deviceId": trip.resolution.deviceId.map { .string($0) } ?? .null,
            "resolution": .string(trip.resolution.reason), "heldBatches": .int(Int64(trip.heldBatches)),
          ])
        }),
      "outboundBatches": .int(Int64(outboundBatches)),
      "pairings": .int(Int64(pairings.count)),
    ]
    if let outbox {
      fields["outbox"] = .object([
        "undelivered": .int(Int64(outbox.undelivered)), "deadLetters": .int(Int64(outbox.deadLetters)),
        "unresolvedTrips": .int(Int64(outbox.unresolvedTrips)), "limit": .int(Int64(outbox.limit)),
        "oldestAgeSeconds": outbox.oldestAge.map { .double($0.rounded()) } ?? .null,
      ])
    }
    return .object(fields)
  }
}

extension TrackedBeacon {
  var statusJSON: JSONValue {
    var fields: [String: JSONValue] = [
      "address": .string(address.description), "sightings": .int(Int64(sightings)),
      "proximity": .string(proximity.rawValue),
    ]
    for (key, value) in id.jsonFields { fields[key] = value }
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
  public var json: JSONValue {
    .object([
      "uuid": .string(uuid.uuidString), "major": major.map { .int(Int64($0)) } ?? .null,
      "minor": minor.map { .int(Int64($0)) } ?? .null, "deviceId": .string(deviceId),
      "label": label.map { .string($0) } ?? .null,
    ])
  }
}
