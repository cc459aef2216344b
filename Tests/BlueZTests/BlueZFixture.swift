import BeaconCore
import BlueZ
import DBus
import DBusTestSupport
import Foundation
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

  func source(
    adapter: String? = nil, preferredMode: ScanMode = .activeDiscovery,
    tune: (inout BlueZAdvertisementSource.Options) -> Void = { _ in }
  ) -> BlueZAdvertisementSource {
    var options = BlueZAdvertisementSource.Options()
    options.batchInterval = .milliseconds(10)
    tune(&options)
    return BlueZAdvertisementSource(
      bus: bus.busAddress, adapter: adapter, preferredMode: preferredMode, options: options
    ) { [self] line in
      self.logs.withLock { $0.append(line) }
    }
  }

  // MARK: AdvertisementMonitorManager1 (not in dbusmock 0.28's bluez5 template)

  private func mockCall(_ path: ObjectPath, _ member: MemberName, _ arguments: [DBusValue]) async throws {
    _ = try await control.call(
      destination: BlueZ.service, path: path, interface: "org.freedesktop.DBus.Mock", member: member,
      arguments)
  }

  /// Gives `adapter` an AdvertisementMonitorManager1 with or_patterns support, and gives the mock
  /// ways to call the client back the way bluetoothd would.
  func addMonitorManager(_ adapter: String) async throws {
    let path = ObjectPath("/org/bluez/\(adapter)")
    let manager = "org.bluez.AdvertisementMonitorManager1"
    try await mockCall(
      path, "AddProperty",
      [.string(manager), .string("SupportedMonitorTypes"), .variant(.stringArray(["or_patterns"]))])
    for method in ["RegisterMonitor", "UnregisterMonitor"] {
      try await mockCall(
        path, "AddMethod", [.string(manager), .string(method), .string("o"), .string(""), .string("")])
    }
    let callClient = """
      obj = self.connection.get_object(args[0], args[2], introspect=False)
      m = obj.get_dbus_method(args[3], args[1])
      m() if args[4] == '/' else m(dbus.ObjectPath(args[4]))
      """
    try await mockCall(
      "/", "AddMethod",
      [.string("org.bluez.Mock"), .string("CallClient"), .string("ssoso"), .string(""), .string(callClient)])
    let getObjects = """
      obj = self.connection.get_object(args[0], args[1], introspect=False)
      ret = obj.get_dbus_method('GetManagedObjects', 'org.freedesktop.DBus.ObjectManager')()
      """
    try await mockCall(
      "/", "AddMethod",
      [
        .string("org.bluez.Mock"), .string("GetClientObjects"), .string("so"), .string("a{oa{sa{sv}}}"),
        .string(getObjects),
      ])
  }

  /// The unique name of the source's libdbus connection: neither ours nor the mock's, and not
  /// its signal stream (a socket that only reads, so it never answers a Peer.Ping).
  func clientName() async throws -> String {
    let mockName = try await control.nameOwner(of: BlueZ.service)
    var names: [BusName] = []
    for name in try await control.listNames()
    where name.isUnique && name != control.uniqueName && name != mockName {
      let answers = try? await control.call(
        destination: name, path: "/", interface: .peer, member: "Ping", timeout: .milliseconds(500))
      if answers != nil { names.append(name) }
    }
    return try #require(names.count == 1 ? names.first?.rawValue : nil, "unique names: \(names)")
  }

  /// bluetoothd calling the client's monitor: `member` is Activate, DeviceFound or DeviceLost.
  func callMonitor(_ client: String, _ monitor: ObjectPath, _ member: String, device: ObjectPath = "/")
    async throws
  {
    _ = try await control.call(
      destination: BlueZ.service, path: "/", interface: "org.bluez.Mock", member: "CallClient",
      [
        .string(client), .string("org.bluez.AdvertisementMonitor1"), .objectPath(monitor), .string(member),
        .objectPath(device),
      ])
  }

  func clientObjects(_ client: String, _ root: ObjectPath) async throws -> DBusValue {
    try await control.callReturningOne(
      destination: BlueZ.service, path: "/", interface: "org.bluez.Mock", member: "GetClientObjects",
      [.string(client), .objectPath(root)])
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
  _ timeout: Duration = .seconds(30), _ condition: @Sendable () async throws -> Bool
) async throws -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    if try await condition() { return true }
    try await Task.sleep(for: .milliseconds(25))
  }
  return try await condition()
}

/// Waits for a process to exit, at most `seconds`; SIGKILLs it after that and returns false.
/// (Foundation's `waitUntilExit` would spin forever on a process that hangs.)
@discardableResult
func waitForExit(_ process: Process, seconds: Double = 30) async -> Bool {
  let deadline = ContinuousClock.now.advanced(by: .seconds(seconds))
  while process.isRunning, ContinuousClock.now < deadline {
    try? await Task.sleep(for: .milliseconds(20))
  }
  if process.isRunning {
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    return false
  }
  process.waitUntilExit()
  return true
}

/// Starts `beaconbridge run` on a bus, with its log discarded and no NOTIFY_SOCKET.
func launchDaemon(config: String, stateDirectory: String, bus: String) throws -> Process {
  let daemon = Process()
  daemon.executableURL = URL(fileURLWithPath: ScanCommandTests.binary)
  daemon.arguments = ["run", "--config", config, "--state-dir", stateDirectory]
  var environment = ProcessInfo.processInfo.environment
  environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
  environment.removeValue(forKey: "NOTIFY_SOCKET")
  daemon.environment = environment
  daemon.standardError = FileHandle.nullDevice
  try daemon.run()
  return daemon
}
