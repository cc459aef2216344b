import BeaconCore
import Foundation

@testable import BridgeDaemon

/// A daemon's `Status` for a test to vary: the documented reply (Fixtures/status/status.json)
/// made quiet (nothing paired, in range or active, idle upload, no drops, no fleet), with the
/// given fields over it. A paired or in-range beacon, the active beacon and `upload` given in
/// part are laid over the documented ones.
enum StatusSample {
  static let documented: [String: JSONValue] = {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Fixtures/status/status.json")
    return (try? JSONValue.parse(Data(contentsOf: url)))?.objectValue ?? [:]
  }()

  static func first(_ key: String) -> [String: JSONValue] {
    documented[key]?.arrayValue?.first?.objectValue ?? [:]
  }

  static let pairedBeacon = first("pairedBeacons").merging([
    "batteryLow": .bool(false), "possibleClone": .bool(false), "cloneAddresses": .array([]),
    "reboots": .int(0), "lastRebootAgoSeconds": .null,
  ]) { $1 }

  static let quiet = documented.merging([
    "beaconsInRange": .array([]), "pairedBeacons": .array([]), "activeBeacon": .null,
    "upload": .object([
      "state": .string("idle"), "delivered": .int(0), "deadLettered": .int(0), "consecutiveFailures": .int(0),
      "lastError": .null, "lastDeliveredAgoSeconds": .null, "lastFailedAgoSeconds": .null,
      "retryInSeconds": .null,
    ]),
    "authentication": .object([
      "plainPairings": .int(0), "keyPairings": .int(0), "irkPairings": .int(0), "eidReplaysRefused": .int(0),
      "rpaReplaysRefused": .int(0),
    ]),
    "droppedAdvertisements": .int(0), "manufacturerDataOverLimit": .int(0), "fleet": .null,
  ]) { $1 }.filter { $0.value != .null || $0.key == "activeBeacon" }

  static func over(_ base: [String: JSONValue], _ part: JSONValue) -> JSONValue {
    guard case .object(let fields) = part else { return part }
    return .object(base.merging(fields) { $1 })
  }

  /// The quiet reply with `partial`'s fields over it, as JSON.
  static func json(over partial: JSONValue) -> JSONValue {
    var fields = quiet
    for (key, value) in partial.objectValue ?? [:] {
      switch key {
      case "beaconsInRange": fields[key] = .array((value.arrayValue ?? []).map { over(first(key), $0) })
      case "pairedBeacons": fields[key] = .array((value.arrayValue ?? []).map { over(pairedBeacon, $0) })
      case "activeBeacon": fields[key] = over(documented[key]?.objectValue ?? [:], value)
      case "upload": fields[key] = over(quiet[key]?.objectValue ?? [:], value)
      default: fields[key] = value
      }
    }
    return .object(fields)
  }

  /// The quiet reply with `partial`'s fields over it, read as the CLI reads it.
  static func document(over partial: JSONValue) -> StatusDocument {
    do { return try StatusDocument(json: json(over: partial)) } catch {
      fatalError(error.description)
    }
  }
}
