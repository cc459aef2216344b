/// The fleet topics of one box, `{boxId}` filled in (`[Fleet]`, docs/fleet.md).
public struct FleetTopics: Hashable, Sendable {
  public var status: String
  public var desired: String
  public var reported: String
  public var beacons: String

  public init(_ options: FleetOptions, boxId: String) {
    status = FleetOptions.topic(options.statusTopic, boxId: boxId)
    desired = FleetOptions.topic(options.desiredTopic, boxId: boxId)
    reported = FleetOptions.topic(options.reportedTopic, boxId: boxId)
    beacons = FleetOptions.topic(options.beaconsTopic, boxId: boxId)
  }
}
