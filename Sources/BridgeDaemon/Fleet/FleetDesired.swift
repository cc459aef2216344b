import BeaconCore
import Synchronization

/// Applies the fleet's desired documents (docs/fleet.md "Desired and reported"): each is checked
/// whole (`FleetDocument.parse`), held while a trip is in progress, and applied in one store
/// transaction with its version; the pairings then go to the bridge and the scan filter, and the
/// settings over the file's, as a SIGHUP reload applies them.
final class FleetDesired: Sendable {
  let store: Store
  let bridge: BeaconBridge
  let paired: PairedBeacons
  let settings: DaemonSettings
  let status: FleetLinkStatus
  let logger: DaemonLogger
  /// Runs inside the apply transaction, after the pairings are written (a test's kill point).
  let midway: @Sendable () -> Void
  /// Whether the fleet connection is TLS (`mqtts://`): key material is refused without it.
  let overTLS: Bool
  /// A document that waits for the trip to end.
  private let pending = Mutex<FleetDocument?>(nil)

  init(
    store: Store, bridge: BeaconBridge, paired: PairedBeacons, settings: DaemonSettings,
    status: FleetLinkStatus, logger: DaemonLogger, overTLS: Bool, midway: @escaping @Sendable () -> Void
  ) {
    self.overTLS = overTLS
    self.store = store
    self.bridge = bridge
    self.paired = paired
    self.settings = settings
    self.status = status
    self.logger = logger
    self.midway = midway
  }

  func handle(_ input: FleetInput) async -> [UInt8]? {
    switch input {
    case .message(let message): return await received(message)
    case .tripEnded:
      guard let document = pending.withLock({ $0 }), !(await tripInProgress()) else { return nil }
      pending.withLock { $0 = nil }
      return await apply(document)
    case .beaconsChanged, .reportDue: return nil
    }
  }

  private func tripInProgress() async -> Bool {
    await bridge.status.trips.contains { $0.endedAt == nil }
  }

  private func received(_ message: MQTTIncoming) async -> [UInt8]? {
    // An empty retained message is how a backend clears the topic: nothing to apply.
    if message.payload.isEmpty, !message.oversized { return nil }
    let parsed =
      message.oversized
      ? .failure(FleetRefusal(version: nil, "the document is over \(MQTTClient.maxIncomingBytes) bytes"))
      : FleetDocument.parse(message.payload, overTLS: overTLS)
    let document: FleetDocument
    switch parsed {
    case .failure(let refusal):
      if let version = refusal.version { status.update { $0.lastDesiredVersion = version } }
      logger.log(.warning, "fleet: desired document refused: \(refusal.reason)")
      return FleetReport.refused(refusal)
    case .success(let read): document = read
    }
    status.update { $0.lastDesiredVersion = document.version }
    if let applied = status.current.appliedVersion {
      // The retained document comes again at every connect: the same version is answered, not
      // applied twice.
      if document.version == applied { return FleetReport.applied(applied) }
      if document.version < applied {
        let refusal = FleetRefusal(
          version: document.version, "version \(document.version) is not above the applied version \(applied)"
        )
        logger.log(.warning, "fleet: desired document refused: \(refusal.reason)")
        return FleetReport.refused(refusal)
      }
    }
    if await tripInProgress() {
      pending.withLock { $0 = document }
      logger.log(.notice, "fleet: desired version \(document.version) waits for the trip to end")
      return FleetReport.pending(document.version)
    }
    pending.withLock { $0 = nil }
    return await apply(document)
  }

  private func apply(_ document: FleetDocument) async -> [UInt8] {
    do {
      try await store.applyFleet(document, midway: midway)
      let pairings = try await store.pairings()
      settings.setRemote(document.settings)
      paired.update(pairings)
      await bridge.setPairings(pairings)
      try? await bridge.reload()
    } catch {
      let refusal = FleetRefusal(version: document.version, "the store could not apply it: \(error)")
      logger.log(.error, "fleet: \(refusal.reason)")
      return FleetReport.refused(refusal)
    }
    status.update { $0.appliedVersion = document.version }
    logger.log(
      .notice,
      "fleet: desired version \(document.version) applied: \(document.pairings.count) pairing(s), \(document.settings.count) setting(s)"
    )
    return FleetReport.applied(document.version)
  }
}
