import BeaconCore
import BlueZ
import DBus
import DBusTestSupport
import Foundation
import Synchronization
import Testing

/// A private bus with python-dbusmock's `bluez5` template on it (bluetoothd's stand-in), and a
/// control connection: for the BlueZ source's tests and the daemon and CLI end-to-end tests.
public final class BlueZFixture: Sendable {
  public let bus: PrivateBus
  public let mock: Mutex<MockService>
  public let control: Connection
  /// Lines a source under test logged (`source(…)` in BlueZTests).
  public let logs = Mutex<[String]>([])

  public static func start() async throws -> BlueZFixture {
    let bus = try PrivateBus.start()
    let mock = try await MockService.start(busAddress: bus.address, template: "bluez5", name: BlueZ.service)
    return BlueZFixture(bus: bus, mock: mock, control: try Connection(bus.busAddress))
  }

  private init(bus: PrivateBus, mock: MockService, control: Connection) {
    self.bus = bus
    self.mock = Mutex(mock)
    self.control = control
  }

  public var logLines: [String] { logs.withLock { $0 } }

  public func stop() {
    control.close()
    mock.withLock { $0.stop() }
    bus.stop()
  }

  /// Kills bluetoothd's stand-in (SIGKILL) and starts a fresh one: NameOwnerChanged twice.
  public func restartBlueZ() async throws {
    mock.withLock { $0.stop() }
    let fresh = try await MockService.start(busAddress: bus.address, template: "bluez5", name: BlueZ.service)
    mock.withLock { $0 = fresh }
  }

  // MARK: org.bluez.Mock

  @discardableResult
  public func addAdapter(_ name: String) async throws -> ObjectPath {
    let reply = try await control.callReturningOne(
      destination: BlueZ.service, path: "/", interface: "org.bluez.Mock", member: "AddAdapter",
      [.string(name), .string("box \(name)")])
    return try #require(reply.string.map { ObjectPath($0) })
  }

  @discardableResult
  public func addDevice(_ adapter: String, _ address: String) async throws -> ObjectPath {
    let reply = try await control.callReturningOne(
      destination: BlueZ.service, path: "/", interface: "org.bluez.Mock", member: "AddDevice",
      [.string(adapter), .string(address), .string("beacon")])
    return try #require(reply.string.map { ObjectPath($0) })
  }

  public func removeDevice(_ adapter: String, _ device: ObjectPath) async throws {
    _ = try await control.call(
      destination: BlueZ.service, path: ObjectPath("/org/bluez/\(adapter)"),
      interface: BlueZ.adapterInterface,
      member: "RemoveDevice", [.objectPath(device)])
  }

  public func removeAdapter(_ name: String) async throws {
    _ = try await control.call(
      destination: BlueZ.service, path: "/", interface: "org.bluez.Mock", member: "RemoveAdapter",
      [.string(name)])
  }

  /// Sends Device1 PropertiesChanged through `org.freedesktop.DBus.Mock.EmitSignal`: this is how
  /// an advertisement arrives (dbusmock 0.28's UpdateProperties crashes before emitting).
  public func advertise(_ device: ObjectPath, _ changed: [String: DBusValue]) async throws {
    _ = try await control.call(
      destination: BlueZ.service, path: device, interface: "org.freedesktop.DBus.Mock", member: "EmitSignal",
      [
        .string(InterfaceName.properties.rawValue), .string("PropertiesChanged"), .string("sa{sv}as"),
        .array(
          element: "v",
          [
            .variant(.string(BlueZ.deviceInterface.rawValue)),
            .variant(.stringVariantDictionary(changed)),
            .variant(.stringArray([])),
          ]),
      ])
  }

  public func adapterProperty(_ adapter: String, _ name: String) async throws -> DBusValue {
    try await control.callReturningOne(
      destination: BlueZ.service, path: ObjectPath("/org/bluez/\(adapter)"), interface: .properties,
      member: "Get",
      [.string(BlueZ.adapterInterface.rawValue), .string(name)]
    ).unwrapped
  }

  public func setAdapterProperty(_ adapter: String, _ name: String, _ value: DBusValue) async throws {
    _ = try await control.call(
      destination: BlueZ.service, path: ObjectPath("/org/bluez/\(adapter)"), interface: .properties,
      member: "Set",
      [.string(BlueZ.adapterInterface.rawValue), .string(name), .variant(value)])
  }

  /// The mock's call log on an adapter: method names in call order.
  public func adapterCalls(_ adapter: String) async throws -> [String] {
    let reply = try await control.callReturningOne(
      destination: BlueZ.service, path: ObjectPath("/org/bluez/\(adapter)"),
      interface: "org.freedesktop.DBus.Mock", member: "GetCalls")
    return (reply.arrayElements ?? []).compactMap { call in
      guard case .structure(let fields) = call, fields.count >= 2 else { return nil }
      return fields[1].string
    }
  }
}

/// An iBeacon frame as BlueZ's ManufacturerData holds it (company 0x004C, Apple): type 0x02,
/// length 0x15, UUID E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major 1, minor 7, measured power -59.
public let iBeaconBytes: [UInt8] =
  [
    0x02, 0x15, 0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2, 0xB0, 0x60, 0xD0, 0xF5, 0xA7, 0x10, 0x96,
    0xE0,
  ]
  + [0x00, 0x01, 0x00, 0x07, 0xC5]

public func iBeaconManufacturerData() -> DBusValue {
  .dictionary(key: "q", value: "v", [.init(.uint16(0x004C), .variant(.bytes(iBeaconBytes)))])
}

public let beaconAddress = BluetoothAddress("C0:FF:EE:00:00:01")!
