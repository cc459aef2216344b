import DBus

/// Passive scanning's registration, as bluer's `Monitor`: our application (`AdvertisementMonitor`)
/// exported on the scan's connection and registered with an adapter's
/// AdvertisementMonitorManager1, then unregistered at the end. Which adapter it is registered on
/// is the session's `ScanState`.
final class Monitor: @unchecked Sendable {
  // @unchecked: `app` is touched only by the session's one task (register, then end).
  let connection: Connection
  let callTimeout: Duration
  private var app: ExportedObject?

  init(connection: Connection, callTimeout: Duration) {
    self.connection = connection
    self.callTimeout = callTimeout
  }

  /// Whether `adapter` offers the `or_patterns` monitor type, as the mirror last saw it.
  static func offersPatterns(_ tree: ObjectTree, on adapter: ObjectPath) -> Bool {
    tree[adapter, BlueZ.advertisementMonitorManagerInterface]?[BlueZ.Property.supportedMonitorTypes]?.strings?
      .contains(BlueZ.orPatterns) == true
  }

  /// Exports the application (once) and registers it on `adapter` (RegisterMonitor). `forward`
  /// gets BlueZ's calls on it.
  func register(
    on adapter: ObjectPath, forward: @escaping @Sendable (AdvertisementMonitor.Call, BusName?) -> Void
  ) async throws {
    if app == nil {
      app = try connection.export(
        AdvertisementMonitor.root, subtree: true, handler: AdvertisementMonitor.handler(forward))
    }
    try await manager(adapter, BlueZ.Method.registerMonitor)
  }

  /// UnregisterMonitor on `adapter`.
  func unregister(from adapter: ObjectPath) async throws {
    try await manager(adapter, BlueZ.Method.unregisterMonitor)
  }

  /// Withdraws the application from the bus.
  func unexport() {
    app?.unexport()
    app = nil
  }

  private func manager(_ adapter: ObjectPath, _ member: MemberName) async throws {
    _ = try await BlueZError.mapping {
      try await connection.call(
        destination: BlueZ.service, path: adapter, interface: BlueZ.advertisementMonitorManagerInterface,
        member: member, [.objectPath(AdvertisementMonitor.root)], timeout: callTimeout)
    }
  }
}
