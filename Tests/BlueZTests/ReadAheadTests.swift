import BeaconCore
import BeaconTestSupport
import DBusTestSupport
import Foundation
import Synchronization
import Testing

@testable import BlueZ
@testable import DBus

/// The scan's signal path (a `SignalSocket` feeding a `SessionInbox`, read by `DeviceDecoder`,
/// with the inbox's `isDrained` as the reader's `ready`, as `DiscoverySession` wires them) while
/// the consumer stalls: a bus socket holds only about 170 signals (80 ms at 2,000 a second,
/// docs/PERFORMANCE.md), and the bus drops what it will not queue (`busQueue`), so the reader
/// must go on draining the socket into its own bounded read-ahead.
///
/// Each advertisement carries its number as its RSSI, so that what arrives is compared with what
/// was sent exactly, in order.
///
/// Tagged `.process`: the stall and the send rate are timed, and a starved reader thread would
/// lose signals the test counts as the code's.
@Suite(.tags(.process), .timeLimit(.minutes(2)))
struct ReadAheadTests {
  static let rate = 2_000
  static let total = 3_000
  static let stall: Duration = .milliseconds(500)
  /// What the bus queues for the scan's connection beyond its socket: 64 KiB, about 220 of these
  /// signals. dbus-daemon's default is far larger; a bus whose memory is short drops sooner, and
  /// the bound makes the loss at the bus certain for a reader that stops reading (the stall
  /// sends about 1,000 signals, 290 KiB).
  static let busQueue = 64 << 10

  struct Outcome {
    var received: [Int16]
    var dropped: Int
  }

  /// Streams `total` Device1 PropertiesChanged at `rate` a second over 8 devices while the
  /// consumer holds its first batch for `stall`; returns what the consumer got, in order, once
  /// every signal is accounted for (received or counted as dropped), or when 20 s have passed.
  static func run(readAhead: Int) async throws -> Outcome {
    let bus = try PrivateBus.start(maxOutgoingBytes: busQueue)
    defer { bus.stop() }
    let inbox = SessionInbox<[SignalItem<DeviceUpdate>]>()
    let dropped = EventCount()
    let decoder = DeviceDecoder()
    let socket = try SignalSocket(
      // The session's PropertiesChanged rule but for its sender: the test's sender is not org.bluez.
      bus.busAddress,
      rules: [
        MatchRule(
          interface: .properties, member: BlueZ.SignalName.propertiesChanged, pathNamespace: BlueZ.root)
      ],
      decode: decoder.decode, deliver: { inbox.yield($0) }, ready: { inbox.isDrained },
      finished: { inbox.finish() }, readAhead: readAhead, dropped: dropped)
    defer { socket.cancel() }
    let sender = try Connection(bus.busAddress)
    defer { sender.close() }

    let sent = Atomic<Int>(0)
    let emitted = DispatchSemaphore(value: 0)
    OSThread.detach(name: "test-emitter") {
      let start = ContinuousClock.now
      let interval = Duration.seconds(1) / rate
      for number in 0..<total {
        let due = start + interval * number
        let left = ContinuousClock.now.duration(to: due)
        if left > .zero { usleep(UInt32(left.components.attoseconds / 1_000_000_000_000)) }
        let device = ObjectPath(String(format: "/org/bluez/hci0/dev_C0_FF_EE_00_00_%02X", number % 8))
        let body: [DBusValue] = [
          .string(BlueZ.deviceInterface.rawValue),
          .stringVariantDictionary([
            "RSSI": .int16(Int16(number)),
            "ManufacturerData": .dictionary(
              key: "q", value: "v", [.init(.uint16(0x004C), .variant(.bytes(DeviceUpdateTests.iBeacon)))]),
          ]),
          .stringArray([]),
        ]
        guard
          (try? sender.emit(
            path: device, interface: .properties, member: BlueZ.SignalName.propertiesChanged, body)) != nil
        else { break }
        sent.add(1, ordering: .relaxed)
      }
      emitted.signal()
    }

    // Should the stream stop short, the inbox is ended after 20 s, and the counts below fail.
    let watchdog = Task {
      try await Task.sleep(for: .seconds(20))
      inbox.finish()
    }
    defer { watchdog.cancel() }
    var received: [Int16] = []
    var stalled = false
    while received.count + dropped.count < total, let batch = await inbox.next() {
      for item in batch {
        if case .decoded(let update) = item, let rssi = update.rssi { received.append(rssi) }
      }
      // The consumer holds its first batch (awaiting BlueZ, say) while the stream goes on.
      if !stalled {
        stalled = true
        try await Task.sleep(for: stall)
      }
    }
    emitted.wait()
    #expect(sent.load(ordering: .relaxed) == total, "the emitter sent every signal")
    return Outcome(received: received, dropped: dropped.count)
  }

  /// A stall of 500 ms at 2,000 a second (1,000 signals, six times what the socket holds) within
  /// the read-ahead bound: every advertisement arrives, in order, and none is counted dropped.
  @Test func aStallShorterThanTheBoundLosesNothing() async throws {
    let outcome = try await Self.run(readAhead: SignalSocket<DeviceUpdate>.defaultReadAhead)
    #expect(outcome.dropped == 0)
    #expect(outcome.received.count == Self.total)
    let everyOneInOrder = outcome.received.elementsEqual(0..<Int16(Self.total))
    #expect(everyOneInOrder, "every advertisement, in order")
  }

  /// The same stall with a bound of 16 KiB (about 90 of these signals): the reader still drains
  /// the socket, so nothing is lost at the bus, and what it cannot hold is counted. Received and
  /// counted add up to what was sent, exactly.
  @Test func aStallLongerThanTheBoundIsCounted() async throws {
    let outcome = try await Self.run(readAhead: 16 << 10)
    #expect(outcome.dropped > 0)
    #expect(outcome.received.count + outcome.dropped == Self.total)
    // What arrived is in order, with the dropped ones missing.
    let inOrder = zip(outcome.received, outcome.received.dropFirst()).allSatisfy { $0 < $1 }
    #expect(inOrder)
  }
}
