import BeaconCore
import BlueZ
import DBus
import DBusTestSupport
import Synchronization
import Testing

/// A private bus with python-dbusmock's `bluez5` template on it, and a control connection.
final class BlueZFixture: Sendable {
  let bus: PrivateBus
  let mock: Mutex<MockService>
  let control: Connection
  let logs = Mutex<[String]>([])

  static func start() async throws -> BlueZFixture {
    let bus = try PrivateBus.start()
    let mock = try await MockService.start(busAddress: bus.address, template: "bluez5", name: BlueZ.service)
    return BlueZFixture(bus: bus, mock: mock, control: try Connection(bus.busAddress))
  }

  private init(bus: PrivateBus, mock: MockService, control: Connection) {
    self.bus = bus
    self.mock = Mutex(mock)
    self.control = control
  }

  func source(adapter: String? = nil) -> BlueZAdvertisementSource {
    var options = BlueZAdvertisementSource.Options()
    options.batchInterval = .milliseconds(10)
    return BlueZAdvertisementSource(bus: bus.busAddress, adapter: adapter, options: options) { [self] line in
      self.logs.withLock { $0.append(line) }
    }
  }

  var logLines: [String] { logs.withLock { $0 } }

  func stop() {
    control.close()
    mock.withLock { $0.stop() }
    bus.stop()
  }

  /// Kills bluetoothd's stand-in (SIGKILL) and starts a fresh one: NameOwnerChanged twice.
  func restartBlueZ() async throws {
    mock.withLock { $0.stop() }
    let fresh = try await MockService.start(busAddress: bus.address, template: "bluez5", name: BlueZ.service)
    mock.withLock { $0 = fresh }
  }

  // MARK: org.bluez.Mock

  @discardableResult
  func addAdapter(_ name: String) async throws -> ObjectPath {
    let reply = try await control.callReturningOne(
      destination: BlueZ.service, path: "/", interface: "org.bluez.Mock", member: "AddAdapter",
      [.string(name), .string("box \(name)")])
    return try #require(reply.string.map { ObjectPath($0) })
  }

  @discardableResult
  func addDevice(_ adapter: String, _ address: String) async throws -> ObjectPath {
    let reply = try await control.callReturningOne(
      destination: BlueZ.service, path: "/", interface: "org.bluez.Mock", member: "AddDevice",
      [.string(adapter), .string(address), .string("beacon")])
    return try #require(reply.string.map { ObjectPath($0) })
  }

  func removeDevice(_ adapter: String, _ device: ObjectPath) async throws {
    _ = try await control.call(
      destination: BlueZ.service, path: ObjectPath("/org/bluez/\(adapter)"),
      interface: BlueZ.adapterInterface,
      member: "RemoveDevice", [.objectPath(device)])
  }

  func removeAdapter(_ name: String) async throws {
    _ = try await control.call(
      destination: BlueZ.service, path: "/", interface: "org.bluez.Mock", member: "RemoveAdapter",
      [.string(name)])
  }

  /// Sends Device1 PropertiesChanged through `org.freedesktop.DBus.Mock.EmitSignal`: this is how
  /// an advertisement arrives (dbusmock 0.28's UpdateProperties crashes before emitting).
  func advertise(_ device: ObjectPath, _ changed: [String: DBusValue]) async throws {
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

  func adapterProperty(_ adapter: String, _ name: String) async throws -> DBusValue {
    try await control.callReturningOne(
      destination: BlueZ.service, path: ObjectPath("/org/bluez/\(adapter)"), interface: .properties,
      member: "Get",
      [.string(BlueZ.adapterInterface.rawValue), .string(name)]
    ).unwrapped
  }

  func setAdapterProperty(_ adapter: String, _ name: String, _ value: DBusValue) async throws {
    _ = try await control.call(
      destination: BlueZ.service, path: ObjectPath("/org/bluez/\(adapter)"), interface: .properties,
      member: "Set",
      [.string(BlueZ.adapterInterface.rawValue), .string(name), .variant(value)])
  }

  /// The mock's call log on an adapter: method names in call order.
  func adapterCalls(_ adapter: String) async throws -> [String] {
    let reply = try await control.callReturningOne(
      destination: BlueZ.service, path: ObjectPath("/org/bluez/\(adapter)"),
      interface: "org.freedesktop.DBus.Mock", member: "GetCalls")
    return (reply.arrayElements ?? []).compactMap { call in
      guard case .structure(let fields) = call, fields.count >= 2 else { return nil }
      return fields[1].string
    }
  }
}

/// Records a source's events on a background task.
final class EventRecorder: Sendable {
  private final class Store: Sendable {
    let events = Mutex<[SourceEvent]>([])
  }
  private let store = Store()
  private let task: Task<Void, Never>

  init(_ stream: AsyncThrowingStream<SourceEvent, any Error>) {
    let store = self.store
    task = Task {
      do {
        for try await event in stream { store.events.withLock { $0.append(event) } }
      } catch {
        Issue.record("the source's stream failed: \(error)")
      }
    }
  }

  var all: [SourceEvent] { store.events.withLock { $0 } }
  var sightings: [Advertisement] {
    all.compactMap { if case .sighting(let ad) = $0 { ad } else { nil } }
  }
  var lost: [BluetoothAddress] {
    all.compactMap { if case .lost(let address) = $0 { address } else { nil } }
  }

  /// Waits until `condition` holds; fails the test with `comment` after `timeout`.
  func wait(
    for timeout: Duration = .seconds(10), _ comment: Comment,
    until condition: @Sendable (EventRecorder) -> Bool
  ) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition(self) {
      guard ContinuousClock.now < deadline else {
        Issue.record("timed out: \(comment); events: \(all)")
        throw CancellationError()
      }
      try await Task.sleep(for: .milliseconds(20))
    }
  }

  /// Cancels the consumer (which stops the scan) and waits for the stream to end.
  func cancel() async {
    task.cancel()
    await task.value
  }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(
  _ timeout: Duration = .seconds(10), _ condition: @Sendable () async throws -> Bool
) async throws -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if try await condition() { return true }
    try await Task.sleep(for: .milliseconds(25))
  }
  return try await condition()
}
