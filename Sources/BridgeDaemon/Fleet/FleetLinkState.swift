import BeaconCore

/// What the fleet link knows, for `status` and `doctor` (through `DaemonStatus`).
public struct FleetLinkState: Hashable, Sendable {
  public var broker: String
  public var boxId: String
  public var connected = false
  /// The version of the last desired document that arrived, whatever became of it.
  public var lastDesiredVersion: Int64?
  /// The version applied (the store's, surviving restarts).
  public var appliedVersion: Int64?
  /// The applied document's settings, over the configuration file's.
  public var appliedSettings: [FleetSetting] = []
  public var lastProblem: String?

  public init(broker: String, boxId: String) {
    self.broker = broker
    self.boxId = boxId
  }
}

extension FleetLinkState {
  /// The `fleet` object of the daemon's `Status` (docs/dbus-api.md; `DaemonStatus.Fleet` reads
  /// it).
  var json: JSONValue {
    .object([
      "broker": .string(broker), "boxId": .string(boxId), "connected": .bool(connected),
      "lastDesiredVersion": lastDesiredVersion.map { .int($0) } ?? .null,
      "appliedVersion": appliedVersion.map { .int($0) } ?? .null,
      "appliedSettings": .object(
        Dictionary(grouping: appliedSettings, by: \.section).mapValues { settings in
          .object(Dictionary(settings.map { ($0.key, JSONValue.string($0.value)) }) { $1 })
        }),
      "lastProblem": lastProblem.map { .string($0) } ?? .null,
    ])
  }
}
