import DBus
import DBusTestSupport
import Testing

/// Every signature BlueZ uses, sent by one connection and read back by another through a real
/// dbus-daemon.
enum Samples {
  static let bytes: [UInt8] = [0x02, 0x15, 0xE2, 0xC5, 0x6D, 0xB5, 0xDF, 0xFB, 0x48, 0xD2, 0xB0, 0x60]

  /// A function, not a global: LeakSanitizer cannot see through the spare-bit tags in a live
  /// global's enum payloads and would report them as leaks.
  static func all() -> [(String, DBusValue)] {
    [
      ("y", .byte(0xFE)),
      ("b", .bool(true)),
      ("n", .int16(-61)),
      ("q", .uint16(0x004C)),
      ("i", .int32(-123_456)),
      ("u", .uint32(4_000_000_000)),
      ("x", .int64(-9_000_000_000)),
      ("t", .uint64(18_000_000_000_000_000_000)),
      ("d", .double(3.25)),
      ("s", .string("grüße 🚐")),
      ("o", .objectPath("/org/bluez/hci0/dev_C0_FF_EE_00_00_01")),
      ("g", .signature("a{sv}")),
      ("ay", .bytes(bytes)),
      ("ay empty", .bytes([])),
      ("as", .stringArray(["org.bluez.Device1", "org.freedesktop.DBus.Properties"])),
      ("as empty", .stringArray([])),
      (
        "a{sv}",
        .stringVariantDictionary([
          "Transport": "le", "DuplicateData": true, "RSSI": .variant(.int16(-70)),
          "Address": "C0:FF:EE:00:00:01",
        ])
      ),
      ("a{sv} empty", .stringVariantDictionary([:])),
      (
        "a{qv} of ay",
        .dictionary(
          key: "q", value: "v",
          [
            .init(.uint16(0x004C), .variant(.bytes(bytes))),
            .init(.uint16(0x0059), .variant(.bytes([1, 2]))),
          ])
      ),
      (
        "aa{sv}",
        .array(element: "a{sv}", [.stringVariantDictionary(["A": .byte(1)]), .stringVariantDictionary([:])])
      ),
      (
        "a{oa{sa{sv}}}",
        .dictionary(
          key: "o", value: "a{sa{sv}}",
          [
            .init(
              .objectPath("/org/bluez/hci0"),
              .dictionary(
                key: "s", value: "a{sv}",
                [.init(.string("org.bluez.Adapter1"), .stringVariantDictionary(["Powered": true]))])),
            .init(.objectPath("/org/bluez/hci1"), .dictionary(key: "s", value: "a{sv}", [])),
          ])
      ),
      ("(sv)", .structure([.string("k"), .variant(.uint32(7))])),
      ("v of v", .variant(.variant(.string("deep")))),
      (
        "a{sv} of a{qv}",
        .stringVariantDictionary(["ManufacturerData": .dictionary(key: "q", value: "v", [])])
      ),
    ]
  }

  static let labels = all().map(\.0)
}

@Suite(.privateBus, .timeLimit(.minutes(2)))
struct SignalTests {
  @Test(arguments: Samples.labels)
  func valueRoundTripsThroughTheBus(_ label: String) async throws {
    let value = try #require(Samples.all().first { $0.0 == label }?.1)
    let address = try PrivateBusTrait.bus().busAddress
    let receiver = try Connection(address)
    defer { receiver.close() }
    let sender = try Connection(address)
    defer { sender.close() }
    let subscription = try await receiver.subscribe(
      to: MatchRule(sender: sender.uniqueName, interface: "org.example.Values", member: "Value"))
    try sender.emit(
      path: "/values", interface: "org.example.Values", member: "Value", [.string(label), value])
    let received = await collect(1, from: subscription)
    let signal = try #require(received.first)
    #expect(signal.body == [.string(label), value])
    #expect(signal.body.last?.signature == value.signature)
    #expect(signal.sender == sender.uniqueName)
    #expect(signal.path == "/values")
    await subscription.cancel()
  }

  /// libdbus aborts on an invalid name; the library throws first.
  @Test func invalidNamesThrowInsteadOfAborting() async throws {
    let sender = try Connection(try PrivateBusTrait.bus().busAddress)
    defer { sender.close() }
    for (path, interface, member) in [
      ("/a-b", "org.example.F", "M"), ("/a", "no dots", "M"), ("/a", "org.example.F", "1x"),
      ("a", "org.x.Y", "M"),
    ] {
      #expect {
        try sender.emit(
          path: ObjectPath(path), interface: InterfaceName(interface), member: MemberName(member))
      } throws: { error in
        (error as? DBusError)?.name == .invalidArgs
      }
    }
    await #expect(throws: DBusError.self) {
      _ = try await sender.call(destination: "not a name!", path: "/", interface: nil, member: "Ping")
    }
  }

  @Test func rulesFilterByMemberPathAndArg0() async throws {
    let address = try PrivateBusTrait.bus().busAddress
    let receiver = try Connection(address)
    defer { receiver.close() }
    let sender = try Connection(address)
    defer { sender.close() }
    let subscription = try await receiver.subscribe(to: [
      MatchRule(interface: "org.example.F", member: "Wanted", pathNamespace: "/org/bluez"),
      MatchRule(interface: "org.example.F", member: "Named", arg0: "org.bluez"),
    ])
    try sender.emit(path: "/org/bluez/hci0", interface: "org.example.F", member: "Other", ["x"])
    try sender.emit(path: "/elsewhere", interface: "org.example.F", member: "Wanted", ["x"])
    try sender.emit(path: "/", interface: "org.example.F", member: "Named", ["org.other"])
    try sender.emit(path: "/org/bluez/hci0", interface: "org.example.F", member: "Wanted", ["1"])
    try sender.emit(path: "/", interface: "org.example.F", member: "Named", ["org.bluez"])
    let signals = await collect(2, from: subscription)
    #expect(signals.map(\.member) == ["Wanted", "Named"])
    #expect(signals.map(\.path) == ["/org/bluez/hci0", "/"])
    await subscription.cancel()
  }

  /// A signal sent to this connection alone reaches it whatever its rules say: the local check
  /// of `arg0` (the same compiled rule `SignalSocket` uses) must refuse one whose first argument
  /// differs, for a plain and for a decoding subscription. The wanted signal goes last; order
  /// holds on one connection, so a refused one taken would have arrived first.
  @Test func aUnicastSignalWhoseArg0DiffersIsRefused() async throws {
    let address = try PrivateBusTrait.bus().busAddress
    let receiver = try Connection(address)
    defer { receiver.close() }
    let sender = try Connection(address)
    defer { sender.close() }
    let rule = MatchRule(interface: "org.example.U", member: "Named", arg0: "org.bluez")
    let plain = try await receiver.subscribe(to: rule)
    let decoding = try await receiver.subscribe(to: [rule]) { signal -> String? in
      var body = signal.body
      return body.string()?.string
    }
    let to = receiver.uniqueName
    try sender.emit(path: "/", interface: "org.example.U", member: "Named", ["org.other"], to: to)
    try sender.emit(path: "/", interface: "org.example.U", member: "Named", [.uint32(1)], to: to)
    try sender.emit(path: "/", interface: "org.example.U", member: "Named", ["org.bluez"], to: to)
    let signals = await collect(1, from: plain)
    #expect(signals.map(\.body) == [["org.bluez"]])
    var items: [SignalItem<String>] = []
    for await batch in decoding.batches {
      items += batch
      if !items.isEmpty { break }
    }
    try #require(items.count == 1)
    if case .decoded(let name) = items[0] { #expect(name == "org.bluez") } else { Issue.record("\(items)") }
    await plain.cancel()
    await decoding.cancel()
  }

  @Test func busSignalsArriveViaMatchRule() async throws {
    let address = try PrivateBusTrait.bus().busAddress
    let watcher = try Connection(address)
    defer { watcher.close() }
    let subscription = try await watcher.subscribe(
      to: MatchRule(sender: .bus, interface: .bus, member: "NameOwnerChanged", arg0: "org.example.Appears"))
    let owner = try Connection(address)
    defer { owner.close() }
    _ = try await owner.requestName("org.example.Appears")
    let signals = await collect(1, from: subscription)
    let signal = try #require(signals.first)
    #expect(signal.body == ["org.example.Appears", "", .string(owner.uniqueName.rawValue)])
  }

  @Test func cancelledSubscriptionStopsDelivery() async throws {
    let address = try PrivateBusTrait.bus().busAddress
    let receiver = try Connection(address)
    defer { receiver.close() }
    let subscription = try await receiver.subscribe(to: MatchRule(interface: "org.example.C"))
    await subscription.cancel()
    var count = 0
    for await _ in subscription.batches { count += 1 }  // finished: returns at once
    #expect(count == 0)
  }

  /// docs/DESIGN.md, Behaviour: drain the bus in batches. 2,000 signals sent flat out must arrive
  /// in far fewer reader wake-ups and subscriber batches than messages.
  /// Also run with no batch interval, to show what the interval buys (printed, see
  /// docs/dbus-notes.md).
  @Test(arguments: [0, 20])
  func floodIsDrainedInBatches(intervalMilliseconds: Int) async throws {
    let address = try PrivateBusTrait.bus().busAddress
    let receiver = try Connection(
      address, options: .init(batchInterval: .milliseconds(intervalMilliseconds)))
    defer { receiver.close() }
    let sender = try Connection(address)
    defer { sender.close() }
    let subscription = try await receiver.subscribe(
      to: MatchRule(sender: sender.uniqueName, interface: "org.example.Flood"))
    let before = receiver.statistics
    let total = 2000
    let payload = DBusValue.dictionary(
      key: "q", value: "v", [.init(.uint16(0x004C), .variant(.bytes(Samples.bytes)))])
    for index in 0..<total {
      try sender.emit(
        path: "/org/bluez/hci0/dev_C0_FF_EE_00_00_01", interface: "org.example.Flood",
        member: "PropertiesChanged",
        [.uint32(UInt32(index)), payload])
    }
    let signals = await collect(total, from: subscription, timeout: .seconds(30))
    #expect(signals.count == total)
    #expect(signals.map { $0.body.first?.int ?? -1 } == Array(0..<total))
    let after = receiver.statistics
    let wakeUps = after.wakeUps - before.wakeUps
    let batches = after.signalBatches - before.signalBatches
    print(
      "flood (batchInterval \(intervalMilliseconds) ms): \(total) signals, \(wakeUps) reader wake-ups, \(batches) batches, \(after.socketReads - before.socketReads) socket reads"
    )
    if intervalMilliseconds > 0 {
      #expect(wakeUps < total / 10)
      #expect(batches < total / 10)
    }
    await subscription.cancel()
  }

  /// A steady rate (one signal about every millisecond, like 1,000 advertisements a second) is
  /// where the batch interval matters: without it the reader wakes for nearly every message.
  @Test(arguments: [0, 50])
  func steadyRateWakeUps(intervalMilliseconds: Int) async throws {
    let address = try PrivateBusTrait.bus().busAddress
    let receiver = try Connection(
      address, options: .init(batchInterval: .milliseconds(intervalMilliseconds)))
    defer { receiver.close() }
    let sender = try Connection(address)
    defer { sender.close() }
    let subscription = try await receiver.subscribe(
      to: MatchRule(sender: sender.uniqueName, interface: "org.example.Steady"))
    let before = receiver.statistics
    let total = 500
    let started = ContinuousClock.now
    for index in 0..<total {
      try sender.emit(
        path: "/steady", interface: "org.example.Steady", member: "Tick", [.uint32(UInt32(index))])
      try await Task.sleep(for: .milliseconds(1))
    }
    let signals = await collect(total, from: subscription, timeout: .seconds(30))
    let elapsed = ContinuousClock.now - started
    #expect(signals.count == total)
    let wakeUps = receiver.statistics.wakeUps - before.wakeUps
    print(
      "steady (batchInterval \(intervalMilliseconds) ms): \(total) signals over \(elapsed), \(wakeUps) reader wake-ups"
    )
    if intervalMilliseconds > 0 {
      // At most one wake-up per interval, plus slack for the start and the tail.
      let intervals = Int(elapsed / .milliseconds(intervalMilliseconds)) + 3
      #expect(wakeUps <= intervals)
    }
    await subscription.cancel()
  }
}
