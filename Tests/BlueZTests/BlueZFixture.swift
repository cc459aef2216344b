import BeaconCore
import BeaconTestSupport
import BlueZ
import BlueZTestSupport
import DBus
import Synchronization
import Testing

/// The BlueZ source on `BlueZFixture`'s mock, and bluetoothd's AdvertisementMonitor calls.
extension BlueZFixture {
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

  /// Waits until `condition` holds over the events so far (`waitUntil`, which fails the test at
  /// the caller's line with `comment` and the events on timeout).
  func wait(
    for timeout: Duration = .seconds(60), _ comment: String,
    sourceLocation: SourceLocation = #_sourceLocation,
    until condition: @Sendable (EventRecorder) -> Bool
  ) async throws {
    try await waitUntil("\(comment); events: \(all)", timeout: timeout, sourceLocation: sourceLocation) {
      condition(self)
    }
  }

  /// Cancels the consumer (which stops the scan) and waits for the stream to end.
  func cancel() async {
    task.cancel()
    await task.value
  }
}
