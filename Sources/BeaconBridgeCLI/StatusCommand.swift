import BeaconCore
import BridgeDaemon
import Foundation

/// `beaconbridge status`: the daemon's state.
public struct StatusCommand: BridgeCommand {
  public static let name = "status"
  public static let abstract = "Show the daemon's state: scanning, beacons, active beacon, trips, outbox."
  public static let usage = "beaconbridge status [--json]"
  public static let discussion = """
    Asks the running daemon over D-Bus. Exits 1 when the daemon is not running.

    OPTIONS:
      --json    The state as one JSON object.
    """

  var json: Bool

  public init(_ arguments: inout Arguments) throws(UsageError) {
    json = arguments.flag("--json")
  }

  public func run(_ console: any Console) async -> Int32 {
    let reply: JSONValue
    let document: Result<StatusDocument, StatusDocumentError>
    do { (reply, document) = try await DaemonClient.status() } catch {
      console.err("beaconbridge: \(error.description)\n")
      return ExitStatus.failure
    }
    // The daemon's state holds no secrets today; what it prints still goes through the one
    // redaction function, so a URL in a future field or a reason cannot leak.
    let redactor = Redactor()
    if json {
      // The reply as the daemon sent it, keys this version does not know included.
      console.out(redactor.redact(reply.compactText) + "\n")
      return ExitStatus.success
    }
    switch document {
    case .success(let status):
      // Text mode: a value from the daemon (a device ID, a reason) cannot reach the terminal raw.
      console.out(redactor.redact(Self.text(status)).escapingControlCharactersExceptNewlines)
      return ExitStatus.success
    case .failure(let error):
      console.err(
        "beaconbridge: \(redactor.redact(error.description).escapingControlCharactersExceptNewlines)\n")
      return ExitStatus.failure
    }
  }

  /// The text form of the daemon's state.
  static func text(_ status: StatusDocument) -> String {
    var out = "Scanning:      \(status.scanning ?? "no")\n"
    if let active = status.activeBeacon {
      let identity = active.identity
      out += "Active beacon: \(active.deviceId) (\(identity.uuid ?? "?") "
      out += "\(identity.major ?? 0)/\(identity.minor ?? 0))\n"
    } else {
      out += "Active beacon: none\n"
    }
    out += "In range:      \(status.beaconsInRange.count) beacon(s)\n"
    for b in status.beaconsInRange {
      out +=
        "  \(b.identity.text ?? "?")  rssi \(b.smoothedRSSI.map { String($0) } ?? "?")  \(b.proximity)\n"
    }
    out += "Paired beacons: \(status.pairedBeacons.count) heard\n"
    for b in status.pairedBeacons {
      out += "  \(b.deviceId): " + health(b) + "\n"
    }
    if !status.ignoredFrames.isEmpty {
      out += "Ignored frames: "
      out += status.ignoredFrames.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        .joined(separator: ", ")
      out += "\n"
    }
    if StatusVerdicts.dropped(status) != .ok {
      out += "Dropped:       \(status.droppedAdvertisements) advertisement(s) while the bridge was busy, "
      out += "\(status.manufacturerDataOverLimit) data entr(ies) past a device's 32\n"
    }
    out += "Trips:         \(status.trips.count)\n"
    for t in status.trips {
      out += "  \(t.tripId): \(t.deviceId ?? "no device ID")"
      out += " (\(t.resolution)), \(t.heldBatches) held"
      if t.waitingForEnd > 0 {
        out += ", \(t.waitingForEnd) waiting for the trip's end"
      }
      out += "\n"
    }
    if let outbox = status.outbox {
      out += "Outbox:        \(outbox.undelivered) undelivered, "
      out += "\(outbox.deadLetters) dead letters, \(outbox.unresolvedTrips) unresolved trips\n"
    }
    out += "Upload:        " + Self.upload(status.upload) + "\n"
    if let fleet = status.fleet {
      out += "Fleet:         " + Self.fleet(fleet) + "\n"
    }
    if let aside = status.fleetSetAside {
      out +=
        status.fleet == nil
        ? "Fleet:         desired version \(aside) set aside: [Fleet] is not configured, so none of its settings or pairings apply\n"
        : "Fleet set aside: desired version \(aside), until the broker's document is applied again\n"
    }
    return out
  }

  /// The fleet link on a line: box, broker, connection, and the desired versions.
  static func fleet(_ f: StatusDocument.Fleet) -> String {
    let link = f.connected ? "connected" : "not connected" + (f.lastProblem.map { " (\($0))" } ?? "")
    let seen = f.lastDesiredVersion.map(String.init) ?? "none"
    let applied = f.appliedVersion.map(String.init) ?? "none"
    return "box \(f.boxId) at \(f.broker), \(link); desired version seen \(seen), applied \(applied)"
  }

  /// How posting goes, on a line: delivering, idle, or failing with the sink's reason.
  static func upload(_ u: StatusDocument.Upload) -> String {
    switch u.state {
    case .failing:
      let retry = u.retryInSeconds.map { ", next try in \(Int($0.rounded(.up))) s" } ?? ""
      return "failing (\(u.consecutiveFailures) in a row\(retry)): " + (u.lastError ?? "?")
    case .delivering:
      let ago = u.lastDeliveredAgoSeconds.map { ", the last \(Int($0)) s ago" } ?? ""
      return "delivering, \(u.delivered) batch(es) sent\(ago)"
    case .idle:
      return "nothing posted yet"
    }
  }

  /// One paired beacon's health on a line: last seen, signal, battery (marked low by
  /// `StatusVerdicts`), temperature, uptime, and the clone verdict.
  static func health(_ b: StatusDocument.PairedBeacon) -> String {
    let problems = StatusVerdicts.problems(b)
    let h = b.health
    var parts: [String] = []
    let ago = b.lastSeenAgoSeconds.map { "seen \(Int($0)) s ago" } ?? "never seen"
    parts.append(b.inRange ? "in range, \(ago)" : "away, \(ago)")
    if let rssi = b.smoothedRSSI { parts.append("rssi \(rssi)") }
    if let loss = b.packetLoss { parts.append("loss \(Int((loss * 100).rounded()))%") }
    if let mv = h.batteryMillivolts {
      let age = h.telemetryAgeSeconds.map { " (\(Int($0)) s old)" } ?? ""
      parts.append("battery \(mv) mV\(problems.contains(.batteryLow) ? " LOW" : "")\(age)")
    }
    if let t = h.temperature { parts.append("\(t) °C") }
    if let up = h.uptimeSeconds { parts.append("up \(Int(up)) s") }
    if let count = h.advertisingCount { parts.append("\(count) adverts") }
    if problems.contains(.rebooted) { parts.append("\(h.reboots) reboot(s)") }
    if let url = h.url { parts.append(url) }
    if problems.contains(.possibleClone) {
      let from =
        h.cloneAddresses.isEmpty ? "" : " (heard from \(h.cloneAddresses.joined(separator: " and ")) at once)"
      parts.append("POSSIBLE CLONE\(from)")
    }
    return parts.joined(separator: ", ")
  }
}

/// `beaconbridge trip start|events|end|assign`: the trip recorder's local API.
public struct TripCommand: BridgeCommand {
  public static let name = "trip"
  public static let abstract = "Feed a trip to the daemon: start, events, end, assign, retry."
  public static let usage = """
    beaconbridge trip start --trip-id ID
           beaconbridge trip events --trip-id ID FILE|-
           beaconbridge trip end --trip-id ID
           beaconbridge trip assign --trip-id ID --device-id X
           beaconbridge trip retry [--trip-id ID]
    """
  public static let discussion = """
    The box's trip recorder drives the daemon with these (or with the D-Bus API they call).

      start    Starts a trip; the daemon snapshots the active beacon for its device ID.
      events   Hands over one batch: a JSON array of event objects, each with a string "type"
               (every field is kept), from FILE or stdin ('-'), at most 16 MiB. Returns once
               the batch is committed to the outbox.
      end      Ends the trip. A trip no beacon resolved is held (or takes the fallback).
      assign   Tags a held, unresolved trip with a device ID by hand.
      retry    Sends the dead letters again (batches the backend refused for good), of one
               trip or all; a 2xx removes them.

    A trip ID is 1 to 128 visible ASCII characters (letters, digits, punctuation; no spaces): it
    becomes the upload's Idempotency-Key. A device ID is 1 to 128 bytes of printable text. Any
    other value is refused with exit 64 before anything is sent.

    Prints the trip's state as JSON. Exits 1 when the daemon refuses (unknown trip, outbox full,
    not armed) or is not running.

    OPTIONS:
      --trip-id ID     The trip (every action but retry needs it; retry without it: all trips).
      --device-id X    assign: the device ID to tag the trip with.
      --json           Accepted for symmetry with other commands; output is always JSON.
    """

  enum Action: String, Sendable { case start, events, end, assign, retry }

  var action: Action
  /// Nil only for `retry` of every trip.
  var tripId: TripID?
  var file: String?
  var deviceId: DeviceID?

  public init(_ arguments: inout Arguments) throws(UsageError) {
    let word = try arguments.positional("action (start, events, end, assign or retry)")
    guard let action = Action(rawValue: word) else {
      throw UsageError("unknown trip action '\(word)' (start, events, end, assign or retry)")
    }
    self.action = action
    tripId = try arguments.option("--trip-id", as: TripID.self)
    guard tripId != nil || action == .retry else { throw UsageError("trip \(word) needs --trip-id") }
    _ = arguments.flag("--json")
    switch action {
    case .events: file = try arguments.positional("events FILE (or - for stdin)")
    case .assign:
      guard let id = try arguments.option("--device-id", as: DeviceID.self) else {
        throw UsageError("trip assign needs --device-id")
      }
      deviceId = id
    default: break
    }
  }

  public func run(_ console: any Console) async -> Int32 {
    // The wire's spelling: `retry` without a trip sends the empty string ("every trip").
    let tripId = tripId?.rawValue ?? ""
    do {
      switch action {
      case .start:
        console.out(
          try await DaemonClient.json(BridgeServiceNames.Method.tripStart, [.string(tripId)]).compactText
            + "\n")
      case .end:
        console.out(
          try await DaemonClient.json(BridgeServiceNames.Method.tripEnd, [.string(tripId)]).compactText + "\n"
        )
      case .retry:
        let result = try await DaemonClient.json(BridgeServiceNames.Method.tripRetry, [.string(tripId)])
        console.out(result.compactText + "\n")
        if !(result["failed"]?.arrayValue ?? []).isEmpty { return ExitStatus.failure }
      case .assign:
        _ = try await DaemonClient.call(
          BridgeServiceNames.Method.tripAssign, [.string(tripId), .string(deviceId?.rawValue ?? "")])
        console.out(
          JSONValue.object(["tripId": .string(tripId), "deviceId": .string(deviceId?.rawValue ?? "")])
            .compactText
            + "\n")
      case .events:
        let data: Data
        do { data = Data(try InputReader.read(file ?? "-", limit: InputLimits.json)) } catch {
          console.err("beaconbridge: trip events: \(error.description)\n")
          return ExitStatus.failure
        }
        let text = String(decoding: data, as: UTF8.self)
        // Checked here too, by the daemon's own reader, so a bad file gets a precise error
        // before anything is sent.
        do { _ = try TripEvent.batch(fromJSON: Array(data)) } catch {
          console.err("beaconbridge: events \(file ?? "-"): \(error.description)\n")
          return ExitStatus.failure
        }
        let reply = try await DaemonClient.call(
          BridgeServiceNames.Method.tripEvents, [.string(tripId), .string(text)])
        let accepted = reply.first?.uint32 ?? 0
        console.out(
          JSONValue.object(["tripId": .string(tripId), "accepted": .int(Int64(accepted))]).compactText + "\n")
      }
    } catch {
      console.err("beaconbridge: \(error.description)\n")
      return ExitStatus.failure
    }
    return ExitStatus.success
  }
}
