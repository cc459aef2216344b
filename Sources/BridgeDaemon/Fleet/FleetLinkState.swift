import BeaconCore

/// What the fleet link knows, for `status` and `doctor` (as `StatusDocument.Fleet`).
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
