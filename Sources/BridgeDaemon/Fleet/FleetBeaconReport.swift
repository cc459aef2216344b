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
    /// The last report's entries without the ever-changing fields; nil before the first.
    var lastNews: [Entry]?
    /// Each beacon's battery in the last two different readings, for the trend.
    var batteries: [String: (previous: Int?, last: Int)] = [:]
  }
  private let memory = Mutex(Memory())

  /// The report's own keys; an entry's others are the pairing's (`ReportedPairing`), the
  /// paired beacon's (`StatusDocument.PairedBeacon`) and its health's (`ReportedHealth`).
  enum Key: String { case boxId, at, beacons, lastSeenAt, telemetryAt, batteryTrend }

  /// Between the last two different battery readings.
  enum Trend: String { case falling, rising, steady }

  /// One paired beacon's entry.
  ///
  /// The pairing's own fields, as `pairs` shows them: a plain pairing's UUID, major and minor; a
  /// pairing by key has none (its nil UUID identifies nothing), so its scheme (`authentication`)
  /// and its number (`pairing`) say which it is, never its key.
  struct Entry: Equatable {
    var pairing: ReportedPairing
    var inRange: Bool
    var rssi: Int?
    var smoothedRSSI: Double?
    var batteryMillivolts: Int?
    var batteryLow: Bool
    var silent: Bool
    var possibleClone: Bool
    var reboots: Int
    var lastSeenAt: String?
    var telemetryAt: String?
    /// Null before there are two readings; absent from `entry` (a report sets it).
    var batteryTrend: Trend??

    /// The entry without the fields that change on every sighting: a change in them alone is
    /// no news.
    var news: Entry {
      var out = self
      (out.rssi, out.smoothedRSSI, out.lastSeenAt, out.telemetryAt) = (nil, nil, nil, nil)
      return out
    }

    var json: JSONValue {
      typealias Paired = StatusDocument.PairedBeacon.Key
      typealias Health = ReportedHealth.Key
      var w = FieldWriter<Key>()
      w.merge(pairing.fields)
      var paired = FieldWriter<Paired>()
      paired.add(.inRange, .bool(inRange))
      paired.add(.rssi, .of(rssi))
      paired.add(.smoothedRssi, .of(smoothedRSSI))
      var health = FieldWriter<Health>()
      health.add(.batteryMv, .of(batteryMillivolts))
      health.add(.batteryLow, .bool(batteryLow))
      health.add(.silent, .bool(silent))
      health.add(.possibleClone, .bool(possibleClone))
      health.add(.reboots, .of(reboots))
      w.merge(paired.fields + health.fields)
      w.add(.lastSeenAt, .of(lastSeenAt))
      w.add(.telemetryAt, .of(telemetryAt))
      w.omittable(.batteryTrend, batteryTrend.map { $0.map { .string($0.rawValue) } ?? .null })
      return w.json
    }
  }

  init(bridge: BeaconBridge, boxId: String) {
    self.bridge = bridge
    self.boxId = boxId
  }

  /// The report to publish, or nil when nothing changed and `due` is false.
  func report(due: Bool) async -> [UInt8]? {
    let status = await bridge.status
    let wall = Date.now
    func at(_ ago: Double?) -> String? { ago.map { wall.addingTimeInterval(-$0).formatted(.iso8601) } }
    var beacons: [Entry] = []
    for paired in status.pairedBeacons {
      var entry = Self.entry(paired, now: status.now, at: at)
      entry.batteryTrend = .some(trend(Self.name(paired.pairing), entry.batteryMillivolts))
      beacons.append(entry)
    }
    let news = beacons.map(\.news)
    let changed = memory.withLock { memory in
      defer { memory.lastNews = news }
      return memory.lastNews != news
    }
    guard changed || due else { return nil }
    var w = FieldWriter<Key>()
    w.add(.boxId, .string(boxId))
    w.add(.at, .string(wall.formatted(.iso8601)))
    w.add(.beacons, .array(beacons.map(\.json)))
    return Array(w.json.compactText.utf8)
  }

  /// One paired beacon's entry, without its battery trend; `at` makes an age absolute.
  static func entry(_ paired: PairedBeaconStatus, now: Timestamp, at: (Double?) -> String?) -> Entry {
    let status = StatusDocument.PairedBeacon(paired, now: now)
    return Entry(
      pairing: ReportedPairing(paired.pairing), inRange: status.inRange, rssi: status.rssi,
      smoothedRSSI: status.smoothedRSSI, batteryMillivolts: status.health.batteryMillivolts,
      batteryLow: status.health.batteryLow, silent: status.health.silent,
      possibleClone: status.health.possibleClone, reboots: status.health.reboots,
      lastSeenAt: at(status.lastSeenAgoSeconds), telemetryAt: at(status.health.telemetryAgeSeconds),
      batteryTrend: nil)
  }

  /// What the battery trend is remembered by: the pairing, as `pairs` names it.
  static func name(_ pairing: Pairing) -> String {
    if let key = pairing.key { return "\(pairing.deviceId)|\(key.scheme.rawValue)|\(key.pairing)" }
    return
      "\(pairing.deviceId)|\(pairing.uuid)|\(pairing.major.map(String.init) ?? "*")|\(pairing.minor.map(String.init) ?? "*")"
  }

  /// Forgets the last report, so that the next one is sent: the last one did not reach the
  /// broker.
  func forget() { memory.withLock { $0.lastNews = nil } }

  /// Between the last two different battery readings; nil before there are two.
  private func trend(_ name: String, _ battery: Int?) -> Trend? {
    guard let battery else { return nil }
    return memory.withLock { memory in
      var entry = memory.batteries[name] ?? (previous: nil, last: battery)
      if entry.last != battery { entry = (previous: entry.last, last: battery) }
      memory.batteries[name] = entry
      guard let previous = entry.previous else { return nil }
      return battery < previous ? .falling : battery > previous ? .rising : .steady
    }
  }
}
