import BeaconCore

/// The presence documents on the status topic (docs/fleet.md "Presence").
enum FleetPresence {
  static func online(version: String, configVersion: Int64?, since: String) -> [UInt8] {
    let fields: [String: JSONValue] = [
      "state": .string("online"), "version": .string(version),
      "configVersion": configVersion.map { .int($0) } ?? .null, "since": .string(since),
    ]
    return Array(JSONValue.object(fields).compactText.utf8)
  }

  static func offline(clean: Bool) -> [UInt8] {
    Array(JSONValue.object(["state": .string("offline"), "clean": .bool(clean)]).compactText.utf8)
  }
}
