import DBus
import DBusTestSupport
import Foundation
import Testing

/// `SignalSocket` against a real dbus-daemon: set-up, framing, order, the generic fallback, and
/// the ways it ends. Serialized: every test listens to the same interface on the suite's bus.
@Suite(.privateBus, .serialized, .timeLimit(.minutes(2)))
struct SignalSocketTests {
  static let interface: InterfaceName = "org.example.Stream"

  /// Reads `Seq(u)` signals' numbers in place; declines everything else.
  static let sequence: @Sendable (borrowing WireSignal) -> UInt32? = { signal in
    guard signal.member(is: "Seq"), signal.signature(is: "u") else { return nil }
    var body = signal.body
    return body.uint32()
  }

  static func collect<T: Sendable>(_ count: Int, from batches: AsyncStream<[SignalItem<T>]>) async
    -> [SignalItem<T>]
  {
    var items: [SignalItem<T>] = []
    for await batch in batches {
      items += batch
      if items.count >= count { break }
    }
    return items
  }

  @Test func manySignalsArriveDecodedAndInOrder() async throws {
    let bus = try PrivateBusTrait.bus()
    let socket = try SignalSocket(
      bus.busAddress, rules: [MatchRule(interface: Self.interface)], batchInterval: .milliseconds(20),
      decode: Self.sequence)
    defer { socket.cancel() }
    #expect(socket.uniqueName.isUnique)
    let sender = try Connection(bus.busAddress)
    defer { sender.close() }
    for number in 0..<5_000 {
      try sender.emit(path: "/seq", interface: Self.interface, member: "Seq", [.uint32(UInt32(number))])
    }
    let items = await Self.collect(5_000, from: socket.batches)
    let numbers = items.compactMap { item -> UInt32? in
      if case .decoded(let number) = item { return number }
      return nil
    }
    #expect(numbers == (0..<5_000).map { UInt32($0) })
    // Batched: far fewer wake-ups than signals.
    #expect(socket.wakeUps < 1_000)
  }

  /// A message larger than the reader's buffer and several reads long is framed whole.
  @Test func largeSignalsSpanReads() async throws {
    let bus = try PrivateBusTrait.bus()
    let socket = try SignalSocket(
      bus.busAddress, rules: [MatchRule(interface: Self.interface)], decode: Self.sequence)
    defer { socket.cancel() }
    let sender = try Connection(bus.busAddress)
    defer { sender.close() }
    let big = (0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    try sender.emit(path: "/big", interface: Self.interface, member: "Big", [.bytes(big), .string("end")])
    try sender.emit(path: "/seq", interface: Self.interface, member: "Seq", [.uint32(7)])
    let items = await Self.collect(2, from: socket.batches)
    try #require(items.count == 2)
    guard case .signal(let signal) = items[0], case .decoded(let number) = items[1] else {
      Issue.record("expected the big signal generic, then Seq decoded: \(items.count) items")
      return
    }
    #expect(signal.member == "Big")
    #expect(signal.body == [.bytes(big), .string("end")])
    #expect(number == 7)
  }

  /// Declined signals are read by libdbus and matched locally, arg0 included.
  @Test func declinedSignalsArriveGenericAndRulesHold() async throws {
    let bus = try PrivateBusTrait.bus()
    let socket = try SignalSocket(
      bus.busAddress,
      rules: [
        MatchRule(interface: Self.interface, member: "Named", arg0: "org.bluez"),
        MatchRule(interface: Self.interface, member: "Seq"),
      ], decode: Self.sequence)
    defer { socket.cancel() }
    let sender = try Connection(bus.busAddress)
    defer { sender.close() }
    try sender.emit(path: "/", interface: Self.interface, member: "Named", ["org.other"])
    try sender.emit(path: "/", interface: Self.interface, member: "Other", ["x"])
    try sender.emit(path: "/", interface: Self.interface, member: "Named", ["org.bluez"])
    try sender.emit(path: "/", interface: Self.interface, member: "Seq", ["not a number"])
    try sender.emit(path: "/", interface: Self.interface, member: "Seq", [.uint32(1)])
    let items = await Self.collect(3, from: socket.batches)
    try #require(items.count == 3)
    if case .signal(let named) = items[0] {
      #expect(named.member == "Named")
      #expect(named.body == ["org.bluez"])
      #expect(named.sender == sender.uniqueName)
    } else {
      Issue.record("Named should arrive generic")
    }
    if case .signal(let wrongType) = items[1] {
      #expect(wrongType.body == ["not a number"])
    } else {
      Issue.record("Seq(s) should be declined by the decoder")
    }
    if case .decoded(let number) = items[2] { #expect(number == 1) } else { Issue.record("Seq(u) decoded") }
  }

  /// Reads `Named(s)` signals' name in place; declines everything else.
  static let named: @Sendable (borrowing WireSignal) -> String? = { signal in
    guard signal.member(is: "Named"), signal.signature(is: "s") else { return nil }
    var body = signal.body
    return body.string()?.string
  }

  /// A signal sent to this connection alone reaches it whatever its rules say (the bus routes a
  /// unicast signal by its destination): the socket's own check of `arg0` must refuse one whose
  /// first argument differs, on the fast path (decoded) and on the generic one (declined) alike.
  /// The wanted signal is sent last, and order holds on one connection: had the refused ones
  /// been taken, they would have arrived first.
  @Test(arguments: [true, false])
  func aUnicastSignalWhoseArg0DiffersIsRefused(decoding: Bool) async throws {
    let bus = try PrivateBusTrait.bus()
    let socket = try SignalSocket(
      bus.busAddress, rules: [MatchRule(interface: Self.interface, member: "Named", arg0: "org.bluez")],
      decode: decoding ? Self.named : { _ in nil })
    defer { socket.cancel() }
    let sender = try Connection(bus.busAddress)
    defer { sender.close() }
    let to = socket.uniqueName
    try sender.emit(path: "/", interface: Self.interface, member: "Named", ["org.other"], to: to)
    try sender.emit(path: "/", interface: Self.interface, member: "Named", [.uint32(1)], to: to)
    try sender.emit(path: "/", interface: Self.interface, member: "Named", [], to: to)
    try sender.emit(path: "/", interface: Self.interface, member: "Named", ["org.bluez"], to: to)
    let items = await Self.collect(1, from: socket.batches)
    try #require(items.count == 1)
    switch items[0] {
    case .decoded(let name): #expect(decoding && name == "org.bluez")
    case .signal(let signal): #expect(!decoding && signal.body == ["org.bluez"])
    }
  }

  @Test func aRuleTheBusRefusesFailsClearly() async throws {
    let bus = try PrivateBusTrait.bus()
    #expect {
      _ = try SignalSocket(
        bus.busAddress, rules: [MatchRule(interface: "not an interface")], decode: Self.sequence)
    } throws: { error in
      (error as? DBusError)?.name == .matchRuleInvalid
    }
  }

  @Test func onlyUnixSocketsAreSupported() {
    #expect {
      _ = try SignalSocket(.address("tcp:host=127.0.0.1,port=1"), rules: [], decode: Self.sequence)
    } throws: { error in
      (error as? DBusError)?.name == .notSupported
    }
    #expect {
      _ = try SignalSocket(.address("unix:path=/nonexistent/bus"), rules: [], decode: Self.sequence)
    } throws: { error in
      (error as? DBusError)?.name == .noServer
    }
  }

  @Test func cancelEndsTheStream() async throws {
    let bus = try PrivateBusTrait.bus()
    let socket = try SignalSocket(
      bus.busAddress, rules: [MatchRule(interface: Self.interface)], decode: Self.sequence)
    let ended = Task {
      for await _ in socket.batches {}
      return true
    }
    socket.cancel()
    #expect(await ended.value)
    socket.cancel()  // twice is harmless
  }
}

/// The bus going away ends the stream (its own bus: the suite's must outlive its tests).
@Suite(.timeLimit(.minutes(1)))
struct SignalSocketBusLossTests {
  @Test func busGoingAwayEndsTheStream() async throws {
    let bus = try PrivateBus.start()
    let socket = try SignalSocket(
      bus.busAddress, rules: [MatchRule(interface: SignalSocketTests.interface)],
      decode: SignalSocketTests.sequence)
    let ended = Task {
      for await _ in socket.batches {}
      return true
    }
    bus.stop()
    #expect(await ended.value)
  }
}
