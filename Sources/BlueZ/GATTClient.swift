import DBus

/// A GATT client connection to one device through bluetoothd (BlueZ doc/device-api.txt,
/// doc/gatt-api.txt): Device1.Connect, the service's characteristics found under the device's
/// path through ObjectManager, GattCharacteristic1.ReadValue and WriteValue, and
/// Device1.Disconnect. `with(…)` always disconnects, whatever its body does.
public struct GATTClient: Sendable {
  /// Why the connection could not be made: one sentence with the fix.
  public struct OpenError: Error, Sendable, CustomStringConvertible {
    public let description: String
  }

  public let connection: Connection
  public let device: ObjectPath
  /// The service's characteristics by UUID (lower case).
  public let characteristics: [String: ObjectPath]

  public static let gattServiceInterface: InterfaceName = "org.bluez.GattService1"
  public static let gattCharacteristicInterface: InterfaceName = "org.bluez.GattCharacteristic1"

  /// Connects to the device at `address` (AA:BB:CC:DD:EE:FF) on `adapter` (else the first
  /// powered one), finds the service `serviceUUID`, runs `body` with the client, and disconnects.
  /// When bluetoothd does not know the device yet, it is discovered for up to `discovery`.
  public static func with<T: Sendable>(
    address: String, adapter: String?, serviceUUID: String, bus: BusAddress = .system,
    discovery: Duration = .seconds(20), connect: Duration = .seconds(20),
    _ body: (GATTClient) async -> T
  ) async throws(OpenError) -> T {
    let connection: Connection
    do { connection = try Connection(bus) } catch {
      throw OpenError(description: "cannot reach the system bus (\(error.message)); is dbus running?")
    }
    defer { connection.close() }
    let tree = try await managedObjects(connection)
    guard let adapterPath = tree.selectAdapter(named: adapter) else {
      throw OpenError(
        description: adapter.map {
          "bluetoothd has no adapter \($0); give one 'bluetoothctl list' shows with --adapter"
        }
          ?? "bluetoothd has no powered adapter; power one on ('bluetoothctl power on') or give --adapter")
    }
    let device = ObjectPath(
      "\(adapterPath.rawValue)/\(BlueZ.devicePathPrefix)\(String(address.uppercased().map { $0 == ":" ? "_" : $0 }))"
    )
    if tree[device, BlueZ.deviceInterface] == nil {
      try await discover(device, on: adapterPath, connection, within: discovery, address: address)
    }
    do {
      _ = try await connection.call(
        destination: BlueZ.service, path: device, interface: BlueZ.deviceInterface, member: "Connect",
        timeout: connect)
    } catch let error as DBusError where error.name.rawValue == "org.bluez.Error.AlreadyConnected" {
    } catch {
      // A connection that timed out may still be under way in bluetoothd: cancel it.
      await disconnect(connection, device)
      throw OpenError(
        description:
          "bluetoothd could not connect to \(address) (\(Self.words(error))); make sure the beacon is connectable (often for a short time after a button press) and in range, then run provision again"
      )
    }
    let client: GATTClient
    do throws(OpenError) {
      client = try await GATTClient(
        connection: connection, device: device, serviceUUID: serviceUUID, within: .seconds(10),
        address: address)
    } catch {
      await disconnect(connection, device)
      throw error
    }
    let result = await body(client)
    await disconnect(connection, device)
    return result
  }

  private init(
    connection: Connection, device: ObjectPath, serviceUUID: String, within limit: Duration, address: String
  ) async throws(OpenError) {
    self.connection = connection
    self.device = device
    // The services appear once bluetoothd has resolved them (Device1.ServicesResolved).
    let deadline = ContinuousClock.now + limit
    while true {
      let tree = try await Self.managedObjects(connection)
      let services = tree.objects.filter { path, interfaces in
        path.isDescendant(ofOrEqualTo: device)
          && interfaces[Self.gattServiceInterface]?["UUID"]?.string?.lowercased() == serviceUUID
      }
      if let service = services.keys.sorted().first {
        var found: [String: ObjectPath] = [:]
        for (path, interfaces) in tree.objects {
          guard let properties = interfaces[Self.gattCharacteristicInterface],
            properties["Service"]?.objectPath == service, let uuid = properties["UUID"]?.string
          else { continue }
          found[uuid.lowercased()] = path
        }
        characteristics = found
        return
      }
      let resolved = tree[device, BlueZ.deviceInterface]?["ServicesResolved"]?.bool == true
      guard !resolved, ContinuousClock.now < deadline else {
        throw OpenError(
          description:
            "\(address) has no Eddystone Configuration Service (\(serviceUUID)); make the beacon connectable for configuration (its maker's button or tab), or it is not an Eddystone beacon"
        )
      }
      try? await Task.sleep(for: .milliseconds(200))
    }
  }

  /// Reads a characteristic's value (`ReadValue` with no options).
  public func read(_ uuid: String, timeout: Duration) async throws(DBusError) -> [UInt8] {
    guard let path = characteristics[uuid] else {
      throw DBusError(.unknownObject, "no characteristic \(uuid)")
    }
    do {
      let reply = try await connection.callReturningOne(
        destination: BlueZ.service, path: path, interface: Self.gattCharacteristicInterface,
        member: "ReadValue",
        [.stringVariantDictionary([:])], timeout: timeout)
      guard let bytes = reply.bytes else { throw DBusError(.invalidArgs, "ReadValue did not return bytes") }
      return bytes
    } catch let error as DBusError { throw error } catch { throw DBusError(.failed, "\(error)") }
  }

  /// Writes a characteristic's value with a response (`WriteValue`, type "request"), so that the
  /// beacon's ATT error comes back.
  public func write(_ uuid: String, _ value: [UInt8], timeout: Duration) async throws(DBusError) {
    guard let path = characteristics[uuid] else {
      throw DBusError(.unknownObject, "no characteristic \(uuid)")
    }
    do {
      _ = try await connection.call(
        destination: BlueZ.service, path: path, interface: Self.gattCharacteristicInterface,
        member: "WriteValue",
        [.bytes(value), .stringVariantDictionary(["type": .string("request")])], timeout: timeout)
    } catch let error as DBusError { throw error } catch { throw DBusError(.failed, "\(error)") }
  }

  private static func managedObjects(_ connection: Connection) async throws(OpenError) -> ObjectTree {
    do {
      let reply = try await connection.callReturningOne(
        destination: BlueZ.service, path: BlueZ.objectManagerPath, interface: .objectManager,
        member: BlueZ.Method.getManagedObjects, timeout: .seconds(5))
      return ObjectTree(managedObjects: reply)
    } catch {
      throw OpenError(
        description: "bluetoothd did not answer (\(words(error))); start it with 'systemctl start bluetooth'")
    }
  }

  /// Discovers until the device appears, then stops discovering.
  private static func discover(
    _ device: ObjectPath, on adapter: ObjectPath, _ connection: Connection, within limit: Duration,
    address: String
  ) async throws(OpenError) {
    _ = try? await connection.call(
      destination: BlueZ.service, path: adapter, interface: BlueZ.adapterInterface,
      member: BlueZ.Method.setDiscoveryFilter,
      [.stringVariantDictionary(["Transport": .string("le")])], timeout: .seconds(5))
    _ = try? await connection.call(
      destination: BlueZ.service, path: adapter, interface: BlueZ.adapterInterface,
      member: BlueZ.Method.startDiscovery, timeout: .seconds(5))
    let deadline = ContinuousClock.now + limit
    var found = false
    while !found, ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(250))
      found = try await managedObjects(connection)[device, BlueZ.deviceInterface] != nil
    }
    _ = try? await connection.call(
      destination: BlueZ.service, path: adapter, interface: BlueZ.adapterInterface,
      member: BlueZ.Method.stopDiscovery, timeout: .seconds(5))
    guard found else {
      throw OpenError(
        description:
          "no device \(address) was heard on \(adapter.lastComponent) within \(limit.components.seconds) s; check the address and make the beacon connectable (its button or tab), then run provision again"
      )
    }
  }

  private static func disconnect(_ connection: Connection, _ device: ObjectPath) async {
    _ = try? await connection.call(
      destination: BlueZ.service, path: device, interface: BlueZ.deviceInterface, member: "Disconnect",
      timeout: .seconds(5))
  }

  static func words(_ error: any Error) -> String {
    if let error = error as? DBusError { return error.message.isEmpty ? error.name.rawValue : error.message }
    return "\(error)"
  }
}
