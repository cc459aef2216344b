import BeaconTestSupport
import DBusTestSupport
import Foundation
import Testing

@testable import DBus

@Suite(.privateBus, .timeLimit(.minutes(2)))
struct ConnectionTests {
  @Test func connectsAndSaysHello() async throws {
    let bus = try Connection(try PrivateBusTrait.bus().busAddress)
    defer { bus.close() }
    #expect(bus.uniqueName.isUnique)
    let names = try await bus.listNames()  // as
    #expect(names.contains(bus.uniqueName))
    #expect(names.contains(.bus))
    #expect(try await bus.nameOwner(of: .bus) == .bus)  // s
  }

  @Test func requestNameReturnsTypedReply() async throws {
    let bus = try Connection(try PrivateBusTrait.bus().busAddress)
    defer { bus.close() }
    #expect(try await bus.requestName("org.example.Owner") == .primaryOwner)  // u
    #expect(try await bus.requestName("org.example.Owner") == .alreadyOwner)
    #expect(try await bus.nameOwner(of: "org.example.Owner") == bus.uniqueName)
  }

  @Test func bareCallsReturnBasicTypes() async throws {
    let bus = try Connection(try PrivateBusTrait.bus().busAddress)
    defer { bus.close() }
    let has = try await bus.callReturningOne(
      destination: .bus, path: "/org/freedesktop/DBus", interface: .bus, member: "NameHasOwner",
      [.string(bus.uniqueName.rawValue)])
    #expect(has == .bool(true))  // b
    let credentials = try await bus.callReturningOne(
      destination: .bus, path: "/org/freedesktop/DBus", interface: .bus, member: "GetConnectionCredentials",
      [.string(bus.uniqueName.rawValue)])
    let dictionary = try #require(credentials.stringKeyedDictionary)  // a{sv}
    #expect(dictionary["ProcessID"]?.uint32 == UInt32(getpid()))
    #expect(credentials.signature == "a{sv}")
  }

  @Test func systemBusHonoursEnvironment() throws {
    let custom = try BusAddress.system.resolve { $0 == "DBUS_SYSTEM_BUS_ADDRESS" ? "unix:path=/tmp/x" : nil }
    #expect(custom == "unix:path=/tmp/x")
    let fallback = try BusAddress.system.resolve { _ in nil }
    #expect(fallback == "unix:path=/var/run/dbus/system_bus_socket")
    #expect(throws: DBusError.self) { try BusAddress.session.resolve { _ in nil } }
  }

  @Test func missingServiceKeepsNameAndMessage() async throws {
    let bus = try Connection(try PrivateBusTrait.bus().busAddress)
    defer { bus.close() }
    let error = await #expect(throws: DBusError.self) {
      try await bus.call(
        destination: "org.example.Missing", path: "/", interface: "org.example.X", member: "Y")
    }
    #expect(error?.name == .serviceUnknown)
    #expect(error?.message.contains("org.example.Missing") == true)
  }

  @Test func unknownMethodOnTheBus() async throws {
    let bus = try Connection(try PrivateBusTrait.bus().busAddress)
    defer { bus.close() }
    let error = await #expect(throws: DBusError.self) {
      try await bus.call(
        destination: .bus, path: "/org/freedesktop/DBus", interface: .bus, member: "NoSuchMethod")
    }
    #expect(error?.name == .unknownMethod)
    #expect(error?.message.isEmpty == false)
  }

  @Test func connectingToNothingFails() throws {
    let error = #expect(throws: DBusError.self) {
      _ = try Connection(.address("unix:path=/nonexistent/beaconbridge-test"))
    }
    #expect(error?.name == .noServer || error?.name == .fileNotFound)
  }

  @Test func invalidValuesAreRejectedBeforeSending() async throws {
    let bus = try Connection(try PrivateBusTrait.bus().busAddress)
    defer { bus.close() }
    let error = await #expect(throws: DBusError.self) {
      try await bus.call(
        destination: .bus, path: "/org/freedesktop/DBus", interface: .bus, member: "NameHasOwner",
        [.array(element: "s", [.uint32(1)])])
    }
    #expect(error?.name == .invalidArgs)
    let badPath = await #expect(throws: DBusError.self) {
      try await bus.call(
        destination: .bus, path: "/org/freedesktop/DBus", interface: .bus, member: "X",
        [.objectPath("not a path")])
    }
    #expect(badPath?.name == .invalidArgs)
  }

  @Test func timeoutGivesNoReplyAndConnectionStaysUsable() async throws {
    let privateBus = try PrivateBusTrait.bus()
    let mock = try await MockService.start(
      busAddress: privateBus.address, name: "org.example.Slow", path: "/slow", interface: "org.example.Slow")
    defer { mock.stop() }
    let bus = try Connection(privateBus.busAddress)
    defer { bus.close() }
    _ = try await bus.call(
      destination: "org.example.Slow", path: "/slow", interface: "org.freedesktop.DBus.Mock",
      member: "AddMethod",
      [.string("org.example.Slow"), .string("Sleep"), .string(""), .string(""), .string("time.sleep(2)")])
    let started = ContinuousClock.now
    let error = await #expect(throws: DBusError.self) {
      try await bus.call(
        destination: "org.example.Slow", path: "/slow", interface: "org.example.Slow", member: "Sleep",
        timeout: .milliseconds(300))
    }
    let elapsed = ContinuousClock.now - started
    #expect(error?.name == .noReply)
    #expect(elapsed >= .milliseconds(300) && elapsed < .seconds(10), "\(elapsed): not the 300 ms timeout")
    // The late reply is dropped; later calls still work. The service answers in order, so this
    // call's reply comes after the late one, which must not be taken for it.
    let reply = try await bus.call(
      destination: "org.example.Slow", path: "/slow", interface: "org.freedesktop.DBus.Mock",
      member: "GetCalls", timeout: .seconds(20))
    #expect(reply.first?.arrayElements?.isEmpty == false, "\(reply)")
    #expect(try await bus.nameOwner(of: .bus) == .bus)
  }

  @Test func cancellingACallThrowsCancellation() async throws {
    let privateBus = try PrivateBusTrait.bus()
    let mock = try await MockService.start(
      busAddress: privateBus.address, name: "org.example.Slow2", path: "/slow", interface: "org.example.Slow")
    defer { mock.stop() }
    let bus = try Connection(privateBus.busAddress)
    defer { bus.close() }
    _ = try await bus.call(
      destination: "org.example.Slow2", path: "/slow", interface: "org.freedesktop.DBus.Mock",
      member: "AddMethod",
      [.string("org.example.Slow"), .string("Sleep"), .string(""), .string(""), .string("time.sleep(1)")])
    let task = Task {
      try await bus.call(
        destination: "org.example.Slow2", path: "/slow", interface: "org.example.Slow", member: "Sleep")
    }
    // Cancel once the call is on the wire, waiting for the reply the mock takes a second to give.
    try await waitUntil("the call on the wire") { bus.callsAwaitingReply > 0 }
    try #require(bus.callsAwaitingReply == 1)
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(bus.callsAwaitingReply == 0)
  }

  @Test func closeFailsLaterCalls() async throws {
    let bus = try Connection(try PrivateBusTrait.bus().busAddress)
    bus.close()
    #expect(bus.isClosed)
    let error = await #expect(throws: DBusError.self) { try await bus.listNames() }
    #expect(error?.name == .disconnected)
    bus.close()  // idempotent
  }

  @Test func busGoingAwayFinishesStreamsAndFailsCalls() async throws {
    let ownBus = try PrivateBus.start()
    let bus = try Connection(ownBus.busAddress)
    defer { bus.close() }
    let subscription = try await bus.subscribe(to: MatchRule(interface: "org.example.Never"))
    ownBus.stop()
    for await _ in subscription.batches {}  // ends when the bus hangs up
    #expect(bus.isClosed)
    let error = await #expect(throws: DBusError.self) { try await bus.listNames() }
    #expect(error?.name == .disconnected)
  }
}

@Suite(.privateBus, .timeLimit(.minutes(2)))
struct TypedReplyTests {
  @Test func repliesDecodeToSwiftTypes() async throws {
    let bus = try Connection(try PrivateBusTrait.bus().busAddress)
    defer { bus.close() }
    let path: ObjectPath = "/org/freedesktop/DBus"
    let owner = try await bus.call(
      destination: .bus, path: path, interface: .bus, member: "GetNameOwner",
      [.string("org.freedesktop.DBus")],
      returning: String.self)
    #expect(owner == "org.freedesktop.DBus")
    let names = try await bus.call(
      destination: .bus, path: path, interface: .bus, member: "ListNames", returning: [String].self)
    #expect(names.contains(bus.uniqueName.rawValue))
    let credentials = try await bus.call(
      destination: .bus, path: path, interface: .bus, member: "GetConnectionCredentials",
      [.string(bus.uniqueName.rawValue)], returning: [String: Variant].self)
    #expect(credentials["ProcessID"].flatMap { UInt32(dbusValue: $0.value) } == UInt32(getpid()))
    let mismatch = await #expect(throws: DBusError.self) {
      try await bus.call(
        destination: .bus, path: path, interface: .bus, member: "ListNames", returning: UInt32.self)
    }
    #expect(mismatch?.name == .invalidSignature)
    #expect(mismatch?.message.contains("as") == true)
  }

  @Test func swiftValuesEncode() {
    #expect([UInt8]([1, 2]).dbusValue == .bytes([1, 2]))
    #expect(["a", "b"].dbusValue == .stringArray(["a", "b"]))
    #expect([String: Variant].dbusSignature == "a{sv}")
    #expect([UInt16: Variant].dbusSignature == "a{qv}")
    #expect(["k": Variant(.bool(true))].dbusValue == .stringVariantDictionary(["k": .bool(true)]))
  }
}

extension Connection {
  /// Calls sent and waiting for their reply.
  fileprivate var callsAwaitingReply: Int {
    core.state.withLock { state in
      state.calls.values.filter { if case .waiting = $0 { true } else { false } }.count
    }
  }
}
