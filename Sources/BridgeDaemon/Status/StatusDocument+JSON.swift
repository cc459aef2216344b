import BeaconCore

// The keys of the daemon's `Status` (docs/dbus-api.md, "Output fields"), each spelled once: as a
// case of its object's `Key`, used by that object's `json` (what the daemon sends) and by its
// `init(json:path:)` (what `status`, `doctor` and `pair --nearest` read). A key a reader does not
// know is left alone; one it needs and does not find is a `StatusDocumentError`.

private typealias Reader = StatusFieldReader
private typealias Writer = StatusFieldWriter

extension StatusDocument {
  enum Key: String {
    case armed, scanning, scan, beaconsInRange, activeBeacon, trips, outboundBatches, pairings
    case pairedBeacons, ignoredFrames, upload, authentication, droppedAdvertisements
    case manufacturerDataOverLimit, outbox, fleet, fleetSetAside
  }

  /// The JSON the daemon sends; `compactText` writes it with the keys sorted.
  public var json: JSONValue {
    var w = Writer<Key>()
    w[.armed] = .bool(armed)
    w[.scanning] = .of(scanning)
    w[.scan] = scan.json
    w[.beaconsInRange] = .array(beaconsInRange.map(\.json))
    w[.activeBeacon] = activeBeacon?.json ?? .null
    w[.trips] = .array(trips.map(\.json))
    w[.outboundBatches] = .of(outboundBatches)
    w[.pairings] = .of(pairings)
    w[.pairedBeacons] = .array(pairedBeacons.map(\.json))
    w[.ignoredFrames] = .object(ignoredFrames.mapValues { .int(Int64($0)) })
    w[.upload] = upload.json
    w[.authentication] = authentication.json
    w[.droppedAdvertisements] = .of(droppedAdvertisements)
    w[.manufacturerDataOverLimit] = .of(manufacturerDataOverLimit)
    w.omittable(.outbox, outbox?.json)
    w.omittable(.fleet, fleet?.json)
    w.omittable(.fleetSetAside, fleetSetAside.map { .int($0) })
    return w.json
  }

  /// Reads a `Status` reply.
  public init(json: JSONValue) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: "")
    armed = try r.bool(.armed)
    scanning = try r.optional(.scanning, StatusValue.string)
    scan = try r.required(.scan, Scan.init(json:path:))
    beaconsInRange = try r.array(.beaconsInRange, BeaconInRange.init(json:path:))
    activeBeacon = try r.optional(.activeBeacon, ActiveBeacon.init(json:path:))
    trips = try r.array(.trips, Trip.init(json:path:))
    outboundBatches = try r.int(.outboundBatches)
    pairings = try r.int(.pairings)
    pairedBeacons = try r.array(.pairedBeacons, PairedBeacon.init(json:path:))
    ignoredFrames = try r.required(.ignoredFrames) { (v, p) throws(StatusDocumentError) in
      try StatusValue.map(v, p, StatusValue.int)
    }
    upload = try r.required(.upload, Upload.init(json:path:))
    authentication = try r.required(.authentication, Authentication.init(json:path:))
    droppedAdvertisements = try r.int(.droppedAdvertisements)
    manufacturerDataOverLimit = try r.int(.manufacturerDataOverLimit)
    outbox = try r.optional(.outbox, omittable: true, Outbox.init(json:path:))
    fleet = try r.optional(.fleet, omittable: true, Fleet.init(json:path:))
    fleetSetAside = try r.optional(.fleetSetAside, omittable: true, StatusValue.int64)
  }
}

extension StatusDocument.Scan {
  enum Key: String { case state, backend, detail, retryInSeconds }

  public var json: JSONValue {
    var w = Writer<Key>()
    w[.state] = .string(state.rawValue)
    w.omittable(.backend, backend.map { .string($0) })
    w.omittable(.detail, detail.map { .string($0) })
    w.omittable(.retryInSeconds, retryInSeconds.map { .int(Int64($0)) })
    return w.json
  }

  init(json: JSONValue, path: String) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: path)
    state = try r.required(.state, StatusValue.word)
    backend = try r.optional(.backend, omittable: true, StatusValue.string)
    detail = try r.optional(.detail, omittable: true, StatusValue.string)
    retryInSeconds = try r.optional(.retryInSeconds, omittable: true, StatusValue.int)
  }
}

extension StatusDocument.Identity {
  enum Key: String { case kind, uuid, major, minor, namespace, instance, pairing, authentication }

  var json: JSONValue {
    var w = Writer<Key>()
    w[.kind] = .string(kind)
    w[.uuid] = .of(uuid)
    w[.major] = .of(major)
    w[.minor] = .of(minor)
    w.omittable(.namespace, namespace.map { .string($0) })
    w.omittable(.instance, instance.map { .string($0) })
    w.omittable(.pairing, pairing.map { .int($0) })
    w[.authentication] = .string(authentication)
    return w.json
  }

  init(json: JSONValue, path: String) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: path)
    kind = try r.string(.kind)
    uuid = try r.optional(.uuid, StatusValue.string)
    major = try r.optional(.major, StatusValue.int)
    minor = try r.optional(.minor, StatusValue.int)
    namespace = try r.optional(.namespace, omittable: true, StatusValue.string)
    instance = try r.optional(.instance, omittable: true, StatusValue.string)
    pairing = try r.optional(.pairing, omittable: true, StatusValue.int64)
    authentication = try r.string(.authentication)
  }
}

extension StatusDocument.Calibration {
  enum Key: String { case measuredPower, txPower }

  var json: JSONValue {
    var w = Writer<Key>()
    w[.measuredPower] = .of(measuredPower)
    w[.txPower] = .of(txPower)
    return w.json
  }

  init(json: JSONValue, path: String) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: path)
    measuredPower = try r.optional(.measuredPower, StatusValue.int)
    txPower = try r.optional(.txPower, StatusValue.int)
  }
}

extension StatusDocument.Health {
  enum Key: String {
    case batteryMv, temperatureC, advertisingCount, uptimeSeconds, telemetryAgeSeconds, url, reboots
    case batteryLow, silent, possibleClone, cloneAddresses
  }

  var json: JSONValue {
    var w = Writer<Key>()
    w[.batteryMv] = .of(batteryMillivolts)
    w[.temperatureC] = .of(temperature)
    w[.advertisingCount] = .of(advertisingCount)
    w[.uptimeSeconds] = .of(uptimeSeconds)
    w[.telemetryAgeSeconds] = .of(telemetryAgeSeconds)
    w[.url] = .of(url)
    w[.reboots] = .of(reboots)
    w[.batteryLow] = .bool(batteryLow)
    w[.silent] = .bool(silent)
    w[.possibleClone] = .bool(possibleClone)
    w[.cloneAddresses] = .array(cloneAddresses.map { .string($0) })
    return w.json
  }

  init(json: JSONValue, path: String) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: path)
    batteryMillivolts = try r.optional(.batteryMv, StatusValue.int)
    temperature = try r.optional(.temperatureC, StatusValue.double)
    advertisingCount = try r.optional(.advertisingCount, StatusValue.int)
    uptimeSeconds = try r.optional(.uptimeSeconds, StatusValue.double)
    telemetryAgeSeconds = try r.optional(.telemetryAgeSeconds, StatusValue.double)
    url = try r.optional(.url, StatusValue.string)
    reboots = try r.int(.reboots)
    batteryLow = try r.bool(.batteryLow)
    silent = try r.bool(.silent)
    possibleClone = try r.bool(.possibleClone)
    cloneAddresses = try r.array(.cloneAddresses, StatusValue.string)
  }
}

extension StatusDocument.BeaconInRange {
  enum Key: String { case address, sightings, proximity, rssi, smoothedRssi, distance }

  var json: JSONValue {
    var w = Writer<Key>()
    w[.address] = .string(address)
    w[.sightings] = .of(sightings)
    w[.proximity] = .string(proximity)
    w.merge(identity.json)
    w.merge(calibration.json)
    w.merge(health.json)
    w.omittable(.rssi, rssi.map { .int(Int64($0)) })
    w.omittable(.smoothedRssi, smoothedRSSI.map { .double($0) })
    w.omittable(.distance, distance.map { .double($0) })
    return w.json
  }

  init(json: JSONValue, path: String) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: path)
    address = try r.string(.address)
    sightings = try r.int(.sightings)
    proximity = try r.string(.proximity)
    identity = try .init(json: json, path: path)
    calibration = try .init(json: json, path: path)
    health = try .init(json: json, path: path)
    rssi = try r.optional(.rssi, omittable: true, StatusValue.int)
    smoothedRSSI = try r.optional(.smoothedRssi, omittable: true, StatusValue.double)
    distance = try r.optional(.distance, omittable: true, StatusValue.double)
  }
}

extension StatusDocument.ActiveBeacon {
  enum Key: String { case deviceId, label, smoothedRssi }

  var json: JSONValue {
    var w = Writer<Key>()
    w[.deviceId] = .string(deviceId)
    w[.label] = .of(label)
    w.merge(identity.json)
    w.omittable(.smoothedRssi, smoothedRSSI.map { .double($0) })
    return w.json
  }

  init(json: JSONValue, path: String) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: path)
    deviceId = try r.string(.deviceId)
    label = try r.optional(.label, StatusValue.string)
    identity = try .init(json: json, path: path)
    smoothedRSSI = try r.optional(.smoothedRssi, omittable: true, StatusValue.double)
  }
}

extension StatusDocument.PairedBeacon {
  enum Key: String {
    case deviceId, label, inRange, lastSeenAgoSeconds, rssi, smoothedRssi, packetLoss, lastRebootAgoSeconds
  }

  var json: JSONValue {
    var w = Writer<Key>()
    w[.deviceId] = .string(deviceId)
    w[.label] = .of(label)
    w[.inRange] = .bool(inRange)
    w[.lastSeenAgoSeconds] = .of(lastSeenAgoSeconds)
    w[.rssi] = .of(rssi)
    w[.smoothedRssi] = .of(smoothedRSSI)
    w[.packetLoss] = .of(packetLoss)
    w[.lastRebootAgoSeconds] = .of(lastRebootAgoSeconds)
    w.merge(identity.json)
    w.merge(calibration.json)
    w.merge(health.json)
    return w.json
  }

  init(json: JSONValue, path: String) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: path)
    deviceId = try r.string(.deviceId)
    label = try r.optional(.label, StatusValue.string)
    inRange = try r.bool(.inRange)
    lastSeenAgoSeconds = try r.optional(.lastSeenAgoSeconds, StatusValue.double)
    rssi = try r.optional(.rssi, StatusValue.int)
    smoothedRSSI = try r.optional(.smoothedRssi, StatusValue.double)
    packetLoss = try r.optional(.packetLoss, StatusValue.double)
    lastRebootAgoSeconds = try r.optional(.lastRebootAgoSeconds, StatusValue.double)
    identity = try .init(json: json, path: path)
    calibration = try .init(json: json, path: path)
    health = try .init(json: json, path: path)
  }
}

extension StatusDocument.Trip {
  enum Key: String { case tripId, ended, deviceId, resolution, authentication, heldBatches, waitingForEnd }

  public var json: JSONValue {
    var w = Writer<Key>()
    w[.tripId] = .string(tripId)
    w[.ended] = .bool(ended)
    w[.deviceId] = .of(deviceId)
    w[.resolution] = .string(resolution)
    w[.authentication] = .of(authentication)
    w[.heldBatches] = .of(heldBatches)
    w[.waitingForEnd] = .of(waitingForEnd)
    return w.json
  }

  init(json: JSONValue, path: String) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: path)
    tripId = try r.string(.tripId)
    ended = try r.bool(.ended)
    deviceId = try r.optional(.deviceId, StatusValue.string)
    resolution = try r.string(.resolution)
    authentication = try r.optional(.authentication, StatusValue.string)
    heldBatches = try r.int(.heldBatches)
    waitingForEnd = try r.int(.waitingForEnd)
  }
}

extension StatusDocument.Outbox {
  enum Key: String { case undelivered, deadLetters, unresolvedTrips, limit, oldestAgeSeconds }

  public var json: JSONValue {
    var w = Writer<Key>()
    w[.undelivered] = .of(undelivered)
    w[.deadLetters] = .of(deadLetters)
    w[.unresolvedTrips] = .of(unresolvedTrips)
    w[.limit] = .of(limit)
    w[.oldestAgeSeconds] = .of(oldestAgeSeconds)
    return w.json
  }

  init(json: JSONValue, path: String) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: path)
    undelivered = try r.int(.undelivered)
    deadLetters = try r.int(.deadLetters)
    unresolvedTrips = try r.int(.unresolvedTrips)
    limit = try r.int(.limit)
    oldestAgeSeconds = try r.optional(.oldestAgeSeconds, StatusValue.double)
  }
}

extension StatusDocument.Upload {
  enum Key: String {
    case state, delivered, deadLettered, consecutiveFailures, lastError, lastDeliveredAgoSeconds
    case lastFailedAgoSeconds, retryInSeconds
  }

  var json: JSONValue {
    var w = Writer<Key>()
    w[.state] = .string(state.rawValue)
    w[.delivered] = .of(delivered)
    w[.deadLettered] = .of(deadLettered)
    w[.consecutiveFailures] = .of(consecutiveFailures)
    w[.lastError] = .of(lastError)
    w[.lastDeliveredAgoSeconds] = .of(lastDeliveredAgoSeconds)
    w[.lastFailedAgoSeconds] = .of(lastFailedAgoSeconds)
    w[.retryInSeconds] = .of(retryInSeconds)
    return w.json
  }

  init(json: JSONValue, path: String) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: path)
    state = try r.required(.state, StatusValue.word)
    delivered = try r.int(.delivered)
    deadLettered = try r.int(.deadLettered)
    consecutiveFailures = try r.int(.consecutiveFailures)
    lastError = try r.optional(.lastError, StatusValue.string)
    lastDeliveredAgoSeconds = try r.optional(.lastDeliveredAgoSeconds, StatusValue.double)
    lastFailedAgoSeconds = try r.optional(.lastFailedAgoSeconds, StatusValue.double)
    retryInSeconds = try r.optional(.retryInSeconds, StatusValue.double)
  }
}

extension StatusDocument.Authentication {
  enum Key: String { case plainPairings, keyPairings, irkPairings, eidReplaysRefused, rpaReplaysRefused }

  var json: JSONValue {
    var w = Writer<Key>()
    w[.plainPairings] = .of(plainPairings)
    w[.keyPairings] = .of(keyPairings)
    w[.irkPairings] = .of(irkPairings)
    w[.eidReplaysRefused] = .of(eidReplaysRefused)
    w[.rpaReplaysRefused] = .of(rpaReplaysRefused)
    return w.json
  }

  init(json: JSONValue, path: String) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: path)
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
    var w = Writer<Key>()
    w[.broker] = .string(broker)
    w[.boxId] = .string(boxId)
    w[.connected] = .bool(connected)
    w[.lastDesiredVersion] = .of(lastDesiredVersion)
    w[.appliedVersion] = .of(appliedVersion)
    w[.appliedSettings] = .object(appliedSettings.mapValues { .object($0.mapValues { .string($0) }) })
    w[.lastProblem] = .of(lastProblem)
    return w.json
  }

  init(json: JSONValue, path: String) throws(StatusDocumentError) {
    let r = try Reader<Key>(json, path: path)
    broker = try r.string(.broker)
    boxId = try r.string(.boxId)
    connected = try r.bool(.connected)
    lastDesiredVersion = try r.optional(.lastDesiredVersion, StatusValue.int64)
    appliedVersion = try r.optional(.appliedVersion, StatusValue.int64)
    appliedSettings = try r.required(.appliedSettings) { (v, p) throws(StatusDocumentError) in
      try StatusValue.map(v, p) { (section, q) throws(StatusDocumentError) in
        try StatusValue.map(section, q, StatusValue.string)
      }
    }
    lastProblem = try r.optional(.lastProblem, StatusValue.string)
  }
}
