import BeaconCore
import Synchronization

/// Applies the fleet's desired documents (docs/fleet.md "Desired and reported"): each is checked
/// whole (`FleetDocument.parse`) against the configuration file, held while a trip is in
/// progress, and applied in one store transaction with its version; the settings go over the
/// file's as a SIGHUP reload applies them, and the pairings (by identity and by key) to the
/// bridge, the scan filter and the key authenticator.
final class FleetDesired: Sendable {
  let store: Store
  let bridge: BeaconBridge
  /// The pairings' and keys' one owner, which loads the applied document's pairings.
  let book: PairingBook
  let settings: DaemonSettings
  let status: FleetLinkStatus
  let logger: DaemonLogger
  /// Runs inside the apply transaction, after the pairings are written (a test's kill point).
  let midway: @Sendable () throws(SQLiteError) -> Void
  /// Whether the fleet connection is TLS (`mqtts://`): key material is refused without it.
  let overTLS: Bool
  /// A document that waits for the trip to end.
  private let pending = Mutex<FleetDocument?>(nil)

  init(
    store: Store, bridge: BeaconBridge, book: PairingBook, settings: DaemonSettings,
    status: FleetLinkStatus, logger: DaemonLogger, overTLS: Bool,
    midway: @escaping @Sendable () throws(SQLiteError) -> Void
  ) {
    self.overTLS = overTLS
    self.store = store
    self.bridge = bridge
    self.book = book
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
      : FleetDocument.parse(message.payload, overTLS: overTLS, file: settings.file)
    let document: FleetDocument
    switch parsed {
    case .failure(let refusal): return refused(refusal)
    case .success(let read): document = read
    }
    status.update { $0.lastDesiredVersion = document.version }
    if let applied = status.current.appliedVersion, document.version <= applied {
      // The retained document comes again at every connect: the applied one is answered again
      // (the reported topic may have missed the first answer), not applied twice. Any other
      // document needs a higher version. A digest the store does not have (a document applied
      // before it kept them) cannot tell the two apart, so the document counts as the same.
      if document.version == applied {
        let stored: (version: Int64, settings: [FleetSetting], digest: String?)?
        do throws(StoreError) { stored = try await store.fleetApplied() } catch {
          return refused(
            FleetRefusal(version: document.version, "the store could not be read: \(error.description)"),
            level: .error)
        }
        if let stored, stored.version == applied,
          stored.digest == nil || stored.digest == document.contentDigest
        {
          return FleetReport.applied(applied)
        }
      }
      return refused(
        FleetRefusal(
          version: document.version, "version \(document.version) is not above the applied version \(applied)"
        ))
    }
    if let waiting = pending.withLock({ $0 }), document.version <= waiting.version {
      // The same rule for the document that waits for the trip: an older one never replaces it.
      if document == waiting { return FleetReport.pending(waiting.version) }
      return refused(
        FleetRefusal(
          version: document.version,
          "version \(document.version) is not above the pending version \(waiting.version)"))
    }
    if await tripInProgress() {
      pending.withLock { $0 = document }
      logger.log(.notice, "fleet: desired version \(document.version) waits for the trip to end")
      return FleetReport.pending(document.version)
    }
    pending.withLock { $0 = nil }
    return await apply(document)
  }

  private func refused(_ refusal: FleetRefusal, level: LogRecord.Level = .warning) -> [UInt8] {
    if let version = refusal.version { status.update { $0.lastDesiredVersion = version } }
    logger.log(level, "fleet: desired document refused: \(refusal.reason)")
    return FleetReport.refused(refusal)
  }

  /// Applies a checked document: its settings are tried on the running bridge first (a reload,
  /// which refuses a configuration that breaks a rule), so a document whose settings no longer
  /// fit the file (changed by a SIGHUP while it waited) is refused with nothing changed; then
  /// the store takes the pairings and the version in one transaction, and the bridge, the scan
  /// filter and the key authenticator follow the store.
  private func apply(_ document: FleetDocument) async -> [UInt8] {
    let previous = settings.remote
    settings.setRemote(document.settings)
    do throws(BridgeError) { try await bridge.reload() } catch {
      settings.setRemote(previous)
      return refused(
        FleetRefusal(version: document.version, "its settings do not apply: \(error.description)"))
    }
    do throws(StoreError) {
      try await store.applyFleet(
        document,
        eidClockTolerance: DaemonSettings.bridge(file: settings.file, remote: document.settings)
          .eidClockTolerance,
        midway: midway)
    } catch {
      settings.setRemote(previous)
      do throws(BridgeError) { try await bridge.reload() } catch {
        logger.log(.error, "fleet: the previous settings do not reload: \(error.description)")
      }
      if error.code == .coldSearch {
        return refused(FleetRefusal(version: document.version, error.description))
      }
      return refused(
        FleetRefusal(version: document.version, "the store could not apply it: \(error.description)"),
        level: .error)
    }
    // Written: the store holds this document from here on, whatever follows.
    status.update {
      $0.appliedVersion = document.version
      $0.appliedSettings = document.settings
    }
    do throws(StoreError) {
      try await book.refresh()
    } catch {
      return refused(
        FleetRefusal(
          version: document.version,
          "it is in the store, but the daemon could not load its pairings (\(error.description)); they are loaded at the next start"
        ), level: .error)
    }
    logger.log(
      .notice,
      "fleet: desired version \(document.version) applied: \(document.pairingCount) pairing(s), \(document.settings.count) setting(s)"
    )
    return FleetReport.applied(document.version)
  }
}
