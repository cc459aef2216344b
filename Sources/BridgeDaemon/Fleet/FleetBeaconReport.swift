import BeaconCore
import FoundationEssentials
import Synchronization

/// The beacon report (docs/fleet.md "The beacon report"): each paired beacon as the status
/// gives it (`StatusDocument.PairedBeacon`, with `BeaconHealth`'s verdicts), cut to what a
/// fleet needs, with times made absolute for a retained message. Published when what it says
/// changes (not the RSSI, which always does) and every `[Fleet] ReportInterval`.
final class FleetBeaconReport: Sendable {
  let bridge: BeaconBridge
  let boxId: String
  private struct Memory {
    /// The last report's content without the ever-changing fields; nil before the first.
    var lastKey: JSONValue?
    /// Each beacon's battery in the last two different readings, for the trend.
    var batteries: [String: (previous: Int64?, last: Int64)] = [:]
  }
  private let memory = Mutex(Memory())

  /// The fields that change on every sighting: a change in them alone is no news.
  static let volatile: Set<String> = ["lastSeenAt", "rssi", "smoothedRssi", "telemetryAt"]

  init(bridge: BeaconBridge, boxId: String) {
    self.bridge = bridge
    self.boxId = boxId
  }

  /// The report to publish, or nil when nothing changed and `due` is false.
  func report(due: Bool) async -> [UInt8]? {
    let status = await bridge.status
    let wall = Date.now
    func at(_ ago: JSONValue?) -> JSONValue {
      guard let seconds = ago?.doubleValue else { return .null }
      return .string(wall.addingTimeInterval(-seconds).formatted(.iso8601))
    }
    var beacons: [JSONValue] = []
    for paired in status.pairedBeacons {
      var out = Self.entry(paired, now: status.now, at: at)
      out["batteryTrend"] = trend(Self.name(paired.pairing), out["batteryMv"]?.intValue)
      beacons.append(.object(out))
    }
    let key = JSONValue.array(
      beacons.map { beacon in .object((beacon.objectValue ?? [:]).filter { !Self.volatile.contains($0.key) })
      })
    let changed = memory.withLock { memory in
      defer { memory.lastKey = key }
      return memory.lastKey != key
    }
    guard changed || due else { return nil }
    let report: JSONValue = .object([
      "boxId": .string(boxId), "at": .string(wall.formatted(.iso8601)), "beacons": .array(beacons),
    ])
    return Array(report.compactText.utf8)
  }

  /// One paired beacon's entry, without its battery trend; `at` makes an age absolute.
  ///
  /// The pairing's own fields, as `pairs` shows them: a plain pairing's UUID, major and minor; a
  /// pairing by key has none (its nil UUID identifies nothing), so its scheme (`authentication`)
  /// and its number (`pairing`) say which it is, never its key.
  static func entry(_ paired: PairedBeaconStatus, now: Timestamp, at: (JSONValue?) -> JSONValue)
    -> [String: JSONValue]
  {
    let fields = StatusDocument.PairedBeacon(paired, now: now).json.objectValue ?? [:]
    var out = paired.pairing.json.objectValue ?? [:]
    for key in ["deviceId", "label", "inRange", "rssi", "smoothedRssi", "batteryMv"] {
      out[key] = fields[key] ?? .null
    }
    for key in ["batteryLow", "silent", "possibleClone"] { out[key] = fields[key] ?? .bool(false) }
    out["reboots"] = fields["reboots"] ?? .int(0)
    out["lastSeenAt"] = at(fields["lastSeenAgoSeconds"])
    out["telemetryAt"] = at(fields["telemetryAgeSeconds"])
    return out
  }

  /// What the battery trend is remembered by: the pairing, as `pairs` names it.
  static func name(_ pairing: Pairing) -> String {
    if let key = pairing.key { return "\(pairing.deviceId)|\(key.scheme.rawValue)|\(key.pairing)" }
    return
      "\(pairing.deviceId)|\(pairing.uuid)|\(pairing.major.map(String.init) ?? "*")|\(pairing.minor.map(String.init) ?? "*")"
  }

  /// Forgets the last report, so that the next one is sent: the last one did not reach the
  /// broker.
  func forget() { memory.withLock { $0.lastKey = nil } }

  /// `falling`, `rising` or `steady` between the last two different battery readings; null
  /// before there are two.
  private func trend(_ name: String, _ battery: Int64?) -> JSONValue {
    guard let battery else { return .null }
    return memory.withLock { memory in
      var entry = memory.batteries[name] ?? (previous: nil, last: battery)
      if entry.last != battery { entry = (previous: entry.last, last: battery) }
      memory.batteries[name] = entry
      guard let previous = entry.previous else { return .null }
      return .string(battery < previous ? "falling" : battery > previous ? "rising" : "steady")
    }
  }
}
