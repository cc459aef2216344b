import BeaconCore

/// The fleet link's parts that exist before the bridge (`[Fleet]`, docs/fleet.md): the broker,
/// the box's ID, and the link's state with the applied document's version and settings from
/// the first moment.
struct DaemonFleet: Sendable {
  /// The applied desired document as the store keeps it (`Store.fleetApplied`).
  typealias Applied = (version: Int64, settings: [FleetSetting], digest: String?)

  let broker: MQTTSettings
  let boxId: String
  let status: FleetLinkStatus

  /// nil, having logged why, when `[Fleet]` has no BoxId and the machine no ID.
  init?(_ broker: MQTTSettings, options: FleetOptions, applied: Applied?, logger: DaemonLogger) {
    guard let boxId = options.resolvedBoxId() else {
      logger.log(
        .error,
        "[Fleet] has no BoxId and \(FleetOptions.machineIdPath) holds no machine ID; set [Fleet] BoxId. Not starting"
      )
      return nil
    }
    let status = FleetLinkStatus(FleetLinkState(broker: "\(broker.host):\(broker.port)", boxId: boxId))
    status.update {
      $0.appliedVersion = applied?.version
      $0.appliedSettings = applied?.settings ?? []
    }
    self.broker = broker
    self.boxId = boxId
    self.status = status
  }

  /// The fleet link's service, which hands each desired document and trip end to a
  /// `FleetDesired` over the daemon's store, bridge and settings.
  func link(
    options: FleetOptions, store: Store, bridge: BeaconBridge, book: PairingBook,
    settings: DaemonSettings,
    logger: DaemonLogger, inbox: FleetInbox, hooks: DaemonTestHooks
  ) -> FleetLink {
    let desired = FleetDesired(
      store: store, bridge: bridge, book: book, settings: settings, status: status, logger: logger,
      overTLS: broker.tls, midway: { hooks.fleetApplyMidway() })
    return FleetLink(
      settings: broker, topics: FleetTopics(options, boxId: boxId), version: Daemon.version,
      status: status, logger: logger, inbox: inbox, desired: { await desired.handle($0) },
      beacons: FleetBeaconReport(bridge: bridge, boxId: boxId),
      reportInterval: .seconds(options.reportInterval))
  }
}
