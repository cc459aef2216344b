import BeaconCore
import BlueZ

// The keys of the daemon's `Status` (docs/dbus-api.md, "Output fields") that are the status's
// own, each spelled once: as a case of its object's `Key`, used by that object's `json` (what the
// daemon sends) and by its `init(json:path:)` (what `status`, `doctor` and `pair --nearest`
// read). A beacon's identity, calibration and health, a beacon in range and the active beacon
// are BeaconCore's reported types (`ReportedIdentity`, `ReportedCalibration`, `ReportedHealth`,
// `ReportedBeacon`, `ReportedSnapshot`), which write and read their own keys. A key a reader does
// not know is left alone; one it needs and does not find is a `StatusDocumentError`.

extension StatusDocument {
  enum Key: String {
    case armed, scanning, scan, beaconsInRange, activeBeacon, trips, outboundBatches, pairings
    case pairedBeacons, ignoredFrames, upload, authentication, droppedAdvertisements
    case manufacturerDataOverLimit, outbox, fleet, fleetSetAside
  }

  /// The JSON the daemon sends; `compactText` writes it with the keys sorted.
  public var json: JSONValue {
    var w = FieldWriter<Key>()
    w.add(.armed, .bool(armed))
    w.add(.scanning, .of(scanning))
    w.add(.scan, scan.json)
    w.add(.beaconsInRange, .array(beaconsInRange.map(\.json)))
    w.add(.activeBeacon, activeBeacon?.statusJSON ?? .null)
    w.add(.trips, .array(trips.map(\.json)))
    w.add(.outboundBatches, .of(outboundBatches))
    w.add(.pairings, .of(pairings))
    w.add(.pairedBeacons, .array(pairedBeacons.map(\.json)))
    w.add(.ignoredFrames, .object(ignoredFrames.mapValues { .int(Int64($0)) }))
    w.add(.upload, upload.json)
    w.add(.authentication, authentication.json)
    w.add(.droppedAdvertisements, .of(droppedAdvertisements))
    w.add(.manufacturerDataOverLimit, .of(manufacturerDataOverLimit))
    w.omittable(.outbox, outbox?.json)
    w.omittable(.fleet, fleet?.json)
    w.omittable(.fleetSetAside, fleetSetAside.map { .int($0) })
    return w.json
  }

  /// Reads a `Status` reply.
  public init(json: JSONValue) throws(StatusDocumentError) {
    do { try self.init(fields: json) } catch { throw StatusDocumentError(error) }
  }

  init(fields json: JSONValue) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: "")
    armed = try r.bool(.armed)
    scanning = try r.optional(.scanning, FieldValue.string)
    scan = try r.required(.scan, Scan.init(json:path:))
    beaconsInRange = try r.array(.beaconsInRange, BeaconInRange.init(json:path:))
    activeBeacon = try r.optional(.activeBeacon, ActiveBeacon.init(json:path:))
    trips = try r.array(.trips, Trip.init(json:path:))
    outboundBatches = try r.int(.outboundBatches)
    pairings = try r.int(.pairings)
    pairedBeacons = try r.array(.pairedBeacons, PairedBeacon.init(json:path:))
    ignoredFrames = try r.required(.ignoredFrames) { (v, p) throws(FieldError) in
      try FieldValue.map(v, p, FieldValue.int)
    }
    upload = try r.required(.upload, Upload.init(json:path:))
    authentication = try r.required(.authentication, Authentication.init(json:path:))
    droppedAdvertisements = try r.int(.droppedAdvertisements)
    manufacturerDataOverLimit = try r.int(.manufacturerDataOverLimit)
    outbox = try r.optional(.outbox, omittable: true, Outbox.init(json:path:))
    fleet = try r.optional(.fleet, omittable: true, Fleet.init(json:path:))
    fleetSetAside = try r.optional(.fleetSetAside, omittable: true, FieldValue.int64)
  }
}

extension StatusDocument.Scan {
  enum Key: String { case state, backend, detail, reason, retryInSeconds }

  public var json: JSONValue {
    var w = FieldWriter<Key>()
    w.add(.state, .string(state.rawValue))
    w.omittable(.backend, backend.map { .string($0) })
    w.omittable(.detail, detail.map { .string($0) })
    w.omittable(.reason, reason.map { .string($0.rawValue) })
    w.omittable(.retryInSeconds, retryInSeconds.map { .int(Int64($0)) })
    return w.json
  }

  init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    state = try r.required(.state, FieldValue.word)
    backend = try r.optional(.backend, omittable: true, FieldValue.string)
    detail = try r.optional(.detail, omittable: true, FieldValue.string)
    // A word this version does not know (a newer daemon's) is left unread, as its key would be.
    reason = try r.optional(.reason, omittable: true, FieldValue.string).flatMap(
      ScanWait.Reason.init(rawValue:))
    retryInSeconds = try r.optional(.retryInSeconds, omittable: true, FieldValue.int)
  }
}

extension StatusDocument.PairedBeacon {
  enum Key: String {
    case deviceId, label, inRange, lastSeenAgoSeconds, rssi, smoothedRssi, packetLoss, lastRebootAgoSeconds
  }

  var json: JSONValue {
    var w = FieldWriter<Key>()
    w.add(.deviceId, .string(deviceId.rawValue))
    w.add(.label, .of(label))
    w.add(.inRange, .bool(inRange))
    w.add(.lastSeenAgoSeconds, .of(lastSeenAgoSeconds))
    w.add(.rssi, .of(rssi))
    w.add(.smoothedRssi, .of(smoothedRSSI))
    w.add(.packetLoss, .of(packetLoss))
    w.add(.lastRebootAgoSeconds, .of(lastRebootAgoSeconds))
    w.merge(identity.fields)
    w.merge(calibration.fields)
    w.merge(health.fields(withAge: true))
    return w.json
  }

  init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    deviceId = try r.required(.deviceId, FieldValue.deviceID)
    label = try r.optional(.label, FieldValue.string)
    inRange = try r.bool(.inRange)
    lastSeenAgoSeconds = try r.optional(.lastSeenAgoSeconds, FieldValue.double)
    rssi = try r.optional(.rssi, FieldValue.int)
    smoothedRSSI = try r.optional(.smoothedRssi, FieldValue.double)
    packetLoss = try r.optional(.packetLoss, FieldValue.double)
    lastRebootAgoSeconds = try r.optional(.lastRebootAgoSeconds, FieldValue.double)
    identity = try .init(json: json, path: path)
    calibration = try .init(json: json, path: path)
    health = try .init(json: json, path: path)
  }
}

extension StatusDocument.Trip {
  enum Key: String { case tripId, ended, deviceId, resolution, authentication, heldBatches, waitingForEnd }

  public var json: JSONValue {
    var w = FieldWriter<Key>()
    w.add(.tripId, .string(tripId.rawValue))
    w.add(.ended, .bool(ended))
    w.add(.deviceId, .of(deviceId))
    w.add(.resolution, .string(resolution))
    w.add(.authentication, .of(authentication))
    w.add(.heldBatches, .of(heldBatches))
    w.add(.waitingForEnd, .of(waitingForEnd))
    return w.json
  }

  init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    tripId = try r.required(.tripId, FieldValue.tripID)
    ended = try r.bool(.ended)
    deviceId = try r.optional(.deviceId, FieldValue.deviceID)
    resolution = try r.string(.resolution)
    authentication = try r.optional(.authentication, FieldValue.string)
    heldBatches = try r.int(.heldBatches)
    waitingForEnd = try r.int(.waitingForEnd)
  }
}

extension StatusDocument.Outbox {
  enum Key: String { case undelivered, deadLetters, unresolvedTrips, limit, oldestAgeSeconds }

  public var json: JSONValue {
    var w = FieldWriter<Key>()
    w.add(.undelivered, .of(undelivered))
    w.add(.deadLetters, .of(deadLetters))
    w.add(.unresolvedTrips, .of(unresolvedTrips))
    w.add(.limit, .of(limit))
    w.add(.oldestAgeSeconds, .of(oldestAgeSeconds))
    return w.json
  }

  init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    undelivered = try r.int(.undelivered)
    deadLetters = try r.int(.deadLetters)
    unresolvedTrips = try r.int(.unresolvedTrips)
    limit = try r.int(.limit)
    oldestAgeSeconds = try r.optional(.oldestAgeSeconds, FieldValue.double)
  }
}

extension StatusDocument.Upload {
  enum Key: String {
    case state, delivered, deadLettered, consecutiveFailures, lastError, lastDeliveredAgoSeconds
    case lastFailedAgoSeconds, retryInSeconds
  }

  var json: JSONValue {
    var w = FieldWriter<Key>()
    w.add(.state, .string(state.rawValue))
    w.add(.delivered, .of(delivered))
    w.add(.deadLettered, .of(deadLettered))
    w.add(.consecutiveFailures, .of(consecutiveFailures))
    w.add(.lastError, .of(lastError))
    w.add(.lastDeliveredAgoSeconds, .of(lastDeliveredAgoSeconds))
    w.add(.lastFailedAgoSeconds, .of(lastFailedAgoSeconds))
    w.add(.retryInSeconds, .of(retryInSeconds))
    return w.json
  }

  init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    state = try r.required(.state, FieldValue.word)
    delivered = try r.int(.delivered)
    deadLettered = try r.int(.deadLettered)
    consecutiveFailures = try r.int(.consecutiveFailures)
    lastError = try r.optional(.lastError, FieldValue.string)
    lastDeliveredAgoSeconds = try r.optional(.lastDeliveredAgoSeconds, FieldValue.double)
    lastFailedAgoSeconds = try r.optional(.lastFailedAgoSeconds, FieldValue.double)
    retryInSeconds = try r.optional(.retryInSeconds, FieldValue.double)
  }
}

extension StatusDocument.Authentication {
  enum Key: String { case plainPairings, keyPairings, irkPairings, eidReplaysRefused, rpaReplaysRefused }

  var json: JSONValue {
    var w = FieldWriter<Key>()
    w.add(.plainPairings, .of(plainPairings))
    w.add(.keyPairings, .of(keyPairings))
    w.add(.irkPairings, .of(irkPairings))
    w.add(.eidReplaysRefused, .of(eidReplaysRefused))
    w.add(.rpaReplaysRefused, .of(rpaReplaysRefused))
    return w.json
  }

  init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    plainPairings = try r.int(.plainPairings)
    keyPairings = try r.int(.keyPairings)
    irkPairings = try r.int(.irkPairings)
    eidReplaysRefused = try r.int(.eidReplaysRefused)
    rpaReplaysRefused = try r.int(.rpaReplaysRefused)
  }
}

extension StatusDocument.Fleet {
  enum Key: String {
    case broker, boxId, connected, lastDesiredVersion, appliedVersion, appliedSettings, lastProblem
  }

  var json: JSONValue {
    var w = FieldWriter<Key>()
    w.add(.broker, .string(broker))
    w.add(.boxId, .string(boxId))
    w.add(.connected, .bool(connected))
    w.add(.lastDesiredVersion, .of(lastDesiredVersion))
    w.add(.appliedVersion, .of(appliedVersion))
    w.add(.appliedSettings, .object(appliedSettings.mapValues { .object($0.mapValues { .string($0) }) }))
    w.add(.lastProblem, .of(lastProblem))
    return w.json
  }

  init(json: JSONValue, path: String) throws(FieldError) {
    let r = try FieldReader<Key>(json, path: path)
    broker = try r.string(.broker)
    boxId = try r.string(.boxId)
    connected = try r.bool(.connected)
    lastDesiredVersion = try r.optional(.lastDesiredVersion, FieldValue.int64)
    appliedVersion = try r.optional(.appliedVersion, FieldValue.int64)
    appliedSettings = try r.required(.appliedSettings) { (v, p) throws(FieldError) in
      try FieldValue.map(v, p) { (section, q) throws(FieldError) in
        try FieldValue.map(section, q, FieldValue.string)
      }
    }
    lastProblem = try r.optional(.lastProblem, FieldValue.string)
  }
}
