import BeaconCore
import DBus

// The start-up steps that may refuse to start. Each logs why, at the moment it fails, and
// returns nil (or false), on which `run` returns 1.
extension Daemon {
  /// The state directory, prepared, and its lock (`StateLock`), which `run` holds until the
  /// daemon exits.
  func lockStateDirectory(_ logger: DaemonLogger) -> StateLock? {
    do {
      try StateDirectory.prepare(stateDirectory)
      return try StateLock.acquire(directory: stateDirectory, holder: "beaconbridge run")
    } catch {
      logger.log(.error, "\(error); not starting")
      return nil
    }
  }

  /// The store, with the outbox's bound and told whether the fleet owns the pairings (pair and
  /// unpair are refused while [Fleet] is configured), and the fleet's applied document, whose
  /// settings lie over the file's from the first moment (FleetStore.swift); nil without [Fleet],
  /// or while the document is set aside.
  func openStore(_ config: DaemonConfiguration, _ logger: DaemonLogger) async -> (
    store: Store, fleetApplied: DaemonFleet.Applied?
  )? {
    let store: Store
    do { store = try Store(directory: stateDirectory) } catch {
      logger.log(.error, "\(error.description); not starting")
      return nil
    }
    await store.setOutboxLimit(config.outboxMaxBatches)
    do {
      try await store.setFleetOwnsPairings(config.fleet.enabled)
      // The fleet's state lives and dies with [Fleet]: without it the applied document is set
      // aside (its pairings out of the store, its settings unused), and with it a document set
      // aside counts as none applied, so the broker's retained one is applied again for real.
      if !config.fleet.enabled {
        if let version = try await store.setFleetAside() {
          logger.log(
            .notice,
            "[Fleet] is not configured: the fleet's desired version \(version) is set aside (none of its settings or pairings apply); with [Fleet] back, the broker's document is applied again"
          )
        }
        return (store, nil)
      }
      if try await store.fleetSetAside() != nil { return (store, nil) }
      return (store, try await store.fleetApplied())
    } catch {
      logger.log(.error, "\(error.description); not starting")
      return nil
    }
  }

  /// Arms the bridge: the pairings and the keys from the store (`PairingBook`), then `BeaconBridge.start`, which
  /// checks the configuration and restores the outbox.
  /// A store whose EID pairings, with the configuration's tolerance, make a cold search longer
  /// than `ColdSearchLimit` allows is refused first.
  func arm(_ bridge: BeaconBridge, book: PairingBook, logger: DaemonLogger) async -> Bool {
    do {
      if let refusal = try await book.store.coldSearchRefusal(
        eidClockTolerance: bridge.host.configuration.eidClockTolerance)
      {
        logger.log(.error, "configuration: \(refusal); not starting")
        return false
      }
    } catch {
      logger.log(.error, "\(error.description); not starting")
      return false
    }
    do { try await book.refresh() } catch {
      logger.log(.error, "\(error.description); not starting")
      return false
    }
    do { try await bridge.start() } catch {
      logger.log(.error, "\(error.description); not starting")
      return false
    }
    return true
  }

  /// The D-Bus API, served once `org.beaconbridge` is owned on the system bus: the name is owned
  /// before READY=1.
  func serveAPI(
    bridge: BeaconBridge, store: Store, context: BridgeServiceContext, logger: DaemonLogger,
    announcements: Announcements
  ) async -> (bus: Connection, api: BridgeService)? {
    do {
      let bus = try Connection(.system)
      let reply = try await bus.requestName(BridgeServiceNames.busName)
      guard reply == .primaryOwner || reply == .alreadyOwner else {
        logger.log(
          .error,
          "another beaconbridge daemon owns \(BridgeServiceNames.busName) on the system bus; not starting")
        return nil
      }
      let api = try BridgeService(
        connection: bus, bridge: bridge, store: store, context: context, logger: logger,
        announcements: announcements)
      return (bus, api)
    } catch {
      logger.log(
        .error,
        "cannot own \(BridgeServiceNames.busName) on the system bus (\(error)); is dbus running, and is the D-Bus policy installed? Not starting"
      )
      return nil
    }
  }
}
