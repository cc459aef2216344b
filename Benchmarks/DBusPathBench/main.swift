// `make bench-check`, D-Bus part: the daemon's scan path (SignalSocket, the Device1 fast decoder,
// the device mirror, the BlueZ source's batches, then BeaconPipeline) in a process whose main
// thread is not a Swift async main, so that valgrind 3.19 can run it (it dies in libdispatch's
// `_dispatch_sigsuspend` once an async main parks; see scripts/leakcheck.sh).
//
//   DBusPathBench BUS_ADDRESS COUNT
//   DBusPathBench --manufacturer-data ENTRIES
//   DBusPathBench --devices DEVICES
//
// Connects to BUS_ADDRESS's org.bluez (the bench's C emitter), prints "ready" once discovery
// runs, then consumes until COUNT sightings went through the pipeline, prints "done COUNT" and
// exits. Benchmarks/instructions.py runs it under callgrind for two counts; the slope is the cost
// of one advertisement.
//
// With --manufacturer-data, it decodes one Device1 PropertiesChanged carrying ENTRIES
// ManufacturerData entries (a company of its own each, up to 65,536) with the scan's decoder, inside
// `countedManufacturerData`, which instructions.py counts (`--toggle-collect`) at n and 4n
// entries: the work per message must be linear in its size.
//
// With --devices, DEVICES beacons of addresses of their own, each heard `deviceRounds` times
// (round after round, its RSSI changing), go through what a session does with them: the fast
// decoder, the device mirror (`DeviceMirror.apply`), and the mirror kept under the scan's default
// `maxDevices` after each pass of `deviceBatch` messages (`DeviceMirror.evict`). The messages
// are marshalled first; only `countedDevices` is counted, at n and 4n devices (instructions.py),
// both under the cap and both past it: the mirror's work per update must not grow with the
// number of devices it holds, nor with the number it has forgotten (past the cap, every update
// is of a device evicted before it was heard again).

import BeaconCore
import BlueZ
import DBus
import Foundation
import Synchronization

/// Decodes `message` as the scan does; what it kept, so that the work is not optimized away.
func decodeManufacturerData(_ message: UnsafeRawBufferPointer, _ decoder: DeviceDecoder) -> Int {
  WireSignal.withSignal(message) { decoder.decode($0)?.manufacturerData?.count ?? -1 } ?? -1
}

/// What instructions.py counts. No closure in it: callgrind's `--toggle-collect` matches a
/// closure's name too ("closure #1 in countedManufacturerData"), and entering it would toggle
/// the count off.
@inline(never) func countedManufacturerData(_ message: UnsafeRawBufferPointer, _ decoder: DeviceDecoder)
  -> Int
{
  decodeManufacturerData(message, decoder)
}

/// How many times `--devices` hears each device, and how many messages make one read pass.
let deviceRounds = 5
let deviceBatch = 200

/// Round `round`'s PropertiesChanged of every one of `devices` devices, as BlueZ sends a
/// beacon's: RSSI and ManufacturerData (an iBeacon). One message is marshalled per round and
/// copied with each device's address written over its path's (libdbus marshalling each one took
/// most of the run's time under callgrind, outside what is counted).
func deviceMessages(_ devices: Int, round: Int) throws -> [[UInt8]] {
  let iBeacon: [UInt8] = [0x02, 0x15] + Array(repeating: 0xAB, count: 16) + [0, 1, 0, 7, 0xC5]
  let first = Array("C0_00_00_00_00_00".utf8)
  let template = try WireSignal.marshalled(
    path: ObjectPath("/org/bluez/hci0/dev_" + String(decoding: first, as: UTF8.self)), interface: .properties,
    member: "PropertiesChanged",
    [
      .string("org.bluez.Device1"),
      .stringVariantDictionary([
        "RSSI": .int16(Int16(-50 - round)),
        "ManufacturerData": .dictionary(
          key: "q", value: "v", [.init(.uint16(0x004C), .variant(.bytes(iBeacon)))]),
      ]),
      .stringArray([]),
    ])
  guard
    let at = (0...(template.count - first.count)).first(where: {
      template[$0..<$0 + first.count].elementsEqual(first)
    })
  else { throw DBusError(.failed, "the device's address is not in its message") }
  let hex = Array("0123456789ABCDEF".utf8)
  return (0..<devices).map { index in
    var message = template
    // The five low octets of the address ("C0_" stays): index's, most significant first.
    for octet in 0..<5 {
      let byte = UInt8(truncatingIfNeeded: index >> ((4 - octet) * 8))
      message[at + 3 + octet * 3] = hex[Int(byte >> 4)]
      message[at + 4 + octet * 3] = hex[Int(byte & 0xF)]
    }
    return message
  }
}

/// One message through the scan's decoder.
func decodeDevice(_ message: [UInt8], _ decoder: DeviceDecoder) -> DeviceUpdate? {
  message.withUnsafeBytes { bytes in WireSignal.withSignal(bytes) { decoder.decode($0) } ?? nil }
}

/// What instructions.py counts for `--devices`: every message decoded and applied to the mirror,
/// which is kept under `maxDevices` after each pass of `deviceBatch` messages, 50 ms apart, as
/// `DiscoverySession` does. The sightings. No closure in it (see `countedManufacturerData`):
/// `keep` comes from outside.
@inline(never) func countedDevices(
  _ messages: [[UInt8]], _ decoder: DeviceDecoder, _ mirror: inout DeviceMirror, maxDevices: Int,
  keep: (BluetoothAddress) -> Bool, from start: ContinuousClock.Instant
) -> Int {
  var sightings = 0
  var time = start
  var index = 0
  while index < messages.count {
    let end = min(index + deviceBatch, messages.count)
    while index < end {
      if let update = decodeDevice(messages[index], decoder), mirror.apply(update, at: time) != nil {
        sightings += 1
      }
      index += 1
    }
    _ = mirror.evict(over: maxDevices, keep: keep)
    time = time.advanced(by: .milliseconds(50))
  }
  return sightings
}

/// Never keeps a device from eviction: no paired beacons in the bench.
func keepNone(_: BluetoothAddress) -> Bool { false }

let arguments = CommandLine.arguments
if arguments.count == 3, arguments[1] == "--devices", let devices = Int(arguments[2]), devices > 0 {
  var messages: [[UInt8]] = []
  messages.reserveCapacity(devices * deviceRounds)
  for round in 0..<deviceRounds { messages += try deviceMessages(devices, round: round) }
  let decoder = DeviceDecoder()
  var mirror = DeviceMirror()
  mirror.adapter = "/org/bluez/hci0"
  let maxDevices = BlueZAdvertisementSource.Options().maxDevices
  let sightings = countedDevices(
    messages, decoder, &mirror, maxDevices: maxDevices, keep: keepNone, from: .now)
  say("\(sightings) sightings of \(devices) devices, \(mirror.count) mirrored (at most \(maxDevices))")
  exit(0)
}
if arguments.count == 3, arguments[1] == "--manufacturer-data", let entries = Int(arguments[2]), entries > 0 {
  let iBeacon: [UInt8] = [0x02, 0x15] + Array(repeating: 0xAB, count: 16) + [0, 1, 0, 7, 0xC5]
  let companies = DBusValue.dictionary(
    key: "q", value: "v",
    (0..<entries).map { .init(.uint16(UInt16(truncatingIfNeeded: $0)), .variant(.bytes(iBeacon))) })
  let message = try WireSignal.marshalled(
    path: "/org/bluez/hci0/dev_C0_FF_EE_00_00_01", interface: .properties, member: "PropertiesChanged",
    [
      .string("org.bluez.Device1"), .stringVariantDictionary(["ManufacturerData": companies]),
      .stringArray([]),
    ])
  let decoder = DeviceDecoder()
  let kept = message.withUnsafeBytes { countedManufacturerData($0, decoder) }
  say("kept \(kept) of \(entries)")
  exit(0)
}
guard arguments.count == 3, let count = Int(arguments[2]), count >= 0 else {
  FileHandle.standardError.write(Data("usage: DBusPathBench BUS_ADDRESS COUNT\n".utf8))
  exit(2)
}
let address = arguments[1]

/// One line on stdout, unbuffered (the driver waits for it).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let finished = DispatchSemaphore(value: 0)
let outcome = Mutex<Int32>(0)

/// The consumer, as `BeaconBridge.consume(source:)` is one: an actor the source runs on
/// (`AdvertisementSource.run(isolation:)`), ingesting each batch in the job that delivered it.
actor Consumer {
  @exclusivity(unchecked) var pipeline = BeaconPipeline(pairings: PairingSet([]))
  var sightings = 0
  let clock = BridgeClock(ContinuousClock())

  func consume(_ source: BlueZAdvertisementSource, count: Int) async throws {
    let scan = Task {
      try await source.run(isolation: self) {
        say("ready")
        if count == 0 { withUnsafeCurrentTask { $0?.cancel() } }
      } deliver: { batch in
        // As the bridge does: one clock reading per batch.
        let time = clock.now()
        batch.withUnsafeBufferPointer { events in
          // As the bridge does: in place, through `ingest(_:from:at:)`. Every event counts: in
          // this stream each is a sighting.
          let wanted = UnsafeBufferPointer(rebasing: events[..<max(0, min(events.count, count - sightings))])
          var index = 0
          while index < wanted.count { _ = pipeline.ingest(wanted, from: &index, at: time) }
          sightings += wanted.count
        }
        // Enough: cancelling ends `run` once this batch is handed back.
        if sightings >= count { withUnsafeCurrentTask { $0?.cancel() } }
      }
    }
    try await scan.value
  }
}

Task.detached {
  let source = BlueZAdvertisementSource(bus: .address(address), adapter: "hci0")
  let consumer = Consumer()
  do {
    try await consumer.consume(source, count: count)
    say("done \(await consumer.sightings)")
  } catch {
    FileHandle.standardError.write(Data("DBusPathBench: \(error)\n".utf8))
    outcome.withLock { $0 = 1 }
  }
  finished.signal()
}
finished.wait()
exit(outcome.withLock { $0 })
