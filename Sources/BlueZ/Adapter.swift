import DBus

/// One BlueZ adapter (`/org/bluez/hciN`) and the Adapter1 calls a scan makes on it, as bluer's
/// `Adapter`: discovery with its filter and the InProgress retry, StopDiscovery, RemoveDevice,
/// and the Discovering property.
struct Adapter: Sendable {
  let connection: Connection
  let path: ObjectPath
  let callTimeout: Duration
  let log: @Sendable (String) -> Void

  var name: String { path.lastComponent }

  /// Longer than the kernel's LE discovery window (10.24 s), which bounds an orphaned discovery.
  static let discoveryBusyWindow: Duration = .seconds(15)

  /// What `startDiscovery` achieved.
  enum DiscoveryStart: Sendable, Equatable {
    /// Discovery runs (started now, or already running for this connection).
    case started
    /// NotReady: the adapter is not powered yet; a later Powered change retries.
    case notReady
  }

  /// SetDiscoveryFilter({Transport: "le", DuplicateData: true}), then StartDiscovery (bleak's
  /// recipe). `requested` is told just before StartDiscovery goes out, since from then on a
  /// discovery may run that the scan must stop at its end.
  ///
  /// InProgress means one of two things. Either this connection already discovers on the
  /// adapter, or the kernel refused with Busy and bluetoothd dropped our request. The second
  /// happens after bluetoothd was killed while discovering: the kernel keeps that orphaned
  /// discovery running until its 10.24 s window ends, the new bluetoothd cannot start its own
  /// meanwhile, and no signal follows when the orphan ends (seen in the VM tier, BlueZ 5.66,
  /// Linux 6.1). The adapter's Discovering property tells them apart: false means nobody
  /// discovers for us, so we try again until `discoveryBusyWindow` has passed.
  func startDiscovery(requested: () -> Void) async throws -> DiscoveryStart {
    let filter = DBusValue.stringVariantDictionary([
      BlueZ.DiscoveryFilter.transport: .string(BlueZ.DiscoveryFilter.lowEnergy),
      BlueZ.DiscoveryFilter.duplicateData: true,
    ])
    let deadline = ContinuousClock.now + Self.discoveryBusyWindow
    while true {
      do {
        _ = try await call(BlueZ.Method.setDiscoveryFilter, [filter])
        requested()
        _ = try await call(BlueZ.Method.startDiscovery)
      } catch let error as BlueZError where error.code == .inProgress {
        if await discovering() == false {
          guard ContinuousClock.now < deadline, !Task.isCancelled else { throw error }
          log("bluez: \(name) is busy (a discovery nobody owns?); trying again")
          try? await Task.sleep(for: .seconds(1))
          continue
        }
        log("bluez: discovery on \(name) already in progress")
      } catch let error as BlueZError where error.code == .notReady {
        log("bluez: adapter \(name) is not ready (\(error.message)); waiting for power")
        return .notReady
      }
      return .started
    }
  }

  func stopDiscovery() async throws {
    _ = try await call(BlueZ.Method.stopDiscovery)
  }

  /// Removes a device from BlueZ. A device BlueZ no longer has counts as removed.
  /// - Returns: whether BlueZ removed it now.
  func removeDevice(_ device: ObjectPath) async throws -> Bool {
    do {
      _ = try await call(BlueZ.Method.removeDevice, [.objectPath(device)])
      return true
    } catch let error as BlueZError where error.code == .doesNotExist {
      return false
    }
  }

  /// The adapter's Discovering property, read now (the mirror may lag); nil if unreadable.
  func discovering() async -> Bool? {
    let value = try? await connection.callReturningOne(
      destination: BlueZ.service, path: path, interface: .properties, member: BlueZ.Method.get,
      [.string(BlueZ.adapterInterface.rawValue), .string(BlueZ.Property.discovering)],
      timeout: callTimeout)
    return value?.bool
  }

  /// An Adapter1 call; BlueZ's own errors come back as `BlueZError`.
  private func call(_ member: MemberName, _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
    try await BlueZError.mapping {
      try await connection.call(
        destination: BlueZ.service, path: path, interface: BlueZ.adapterInterface, member: member, arguments,
        timeout: callTimeout)
    }
  }
}
