// `make bench`, in-process part: BeaconCore throughput and trip-start snapshot latency.
// Prints one JSON object per measurement on stdout; Benchmarks/run.py tabulates them.
//
//   BeaconBench [--repeats N] [--advertisements M]

import BeaconCore
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// CPU time of the calling thread, in seconds (the machine is shared: wall time would count
/// other people's work).
func threadCPU() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func monotonic() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func emit(_ object: [String: Any]) {
  let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
  print(String(decoding: data, as: UTF8.self))
}

var repeats = 5
var advertisements = 2_000_000
/// `--instructions N`: only run the two counted loops below over N advertisements, for
/// `valgrind --tool=callgrind --toggle-collect=…` (scripts/bench-check.sh).
var instructions: Int?
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
  switch flag {
  case "--repeats": repeats = Int(arguments.popFirst() ?? "") ?? repeats
  case "--advertisements": advertisements = Int(arguments.popFirst() ?? "") ?? advertisements
  case "--instructions": instructions = Int(arguments.popFirst() ?? "")
  default:
    FileHandle.standardError.write(
      Data("usage: BeaconBench [--repeats N] [--advertisements M] [--instructions N]\n".utf8))
    exit(2)
  }
}

let uuid = UUID(uuidString: "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")!
let beacons = 200

/// The 23 bytes of an iBeacon after Apple's company ID.
func iBeacon(minor: UInt16) -> [UInt8] {
  var bytes: [UInt8] = [0x02, 0x15]
  withUnsafeBytes(of: uuid.uuid) { bytes += $0 }
  bytes += [0x00, 0x01, UInt8(minor >> 8), UInt8(minor & 0xFF), UInt8(bitPattern: -59)]
  return bytes
}

/// 200 beacons round-robin, RSSI varying, 4,096 advertisements to cycle through.
let ads: [Advertisement] = (0..<4096).map { i in
  let beacon = i % beacons
  return Advertisement(
    address: BluetoothAddress(bytes: [0xC0, 0xFF, 0xEE, 0x00, 0x00, UInt8(beacon)])!,
    rssi: -55 - (i / beacons) % 20,
    manufacturerData: [
      ManufacturerData(companyID: BeaconFrameParser.appleCompanyID, data: iBeacon(minor: UInt16(beacon)))
    ])
}
/// 200 beacons × 10 Hz: 2,000 advertisements per simulated second.
let step = 1.0 / 2000

/// The same advertisements as source events, for the pipeline.
let events = ads.map { SourceEvent.sighting($0) }

/// Runs `body` over `advertisements` of `items` in turn and returns items per CPU second.
///
/// Each item is lent to `body` as its receiver would lend it: moved out of the buffer for the
/// call and back after, without a copy. `items[i]` would copy it out, a retain and a release of
/// each of an advertisement's arrays, which the core does not cause and which made up a good share
/// of what was measured.
@inline(__always)
func rate<Item>(
  _ items: [Item], _ advertisements: Int, _ body: (Int, borrowing Item, Timestamp) -> Void
) -> Double {
  var items = items
  return items.withUnsafeMutableBufferPointer { buffer in
    let mask = buffer.count - 1
    precondition(buffer.count & mask == 0, "a power of two")
    let base = buffer.baseAddress!
    let start = threadCPU()
    for i in 0..<advertisements {
      let item = (base + (i & mask)).move()
      body(i, item, Timestamp(seconds: Double(i) * step))
      (base + (i & mask)).initialize(to: consume item)
    }
    return Double(advertisements) / (threadCPU() - start)
  }
}

/// Parse + track over `count` advertisements: what callgrind counts for "core" (its name is
/// matched by `--toggle-collect=*countedParseTrack*`).
@inline(never)
func countedParseTrack(_ count: Int) -> Int {
  var tracker = PresenceTracker()
  _ = rate(ads, count) { _, ad, time in
    for frame in BeaconFrameParser.parse(ad).frames { _ = tracker.observe(frame, from: ad, at: time) }
  }
  return tracker.inRange.count
}

/// The whole pipeline over `count` advertisements (`--toggle-collect=*countedPipeline*`).
@inline(never)
func countedPipeline(_ count: Int) -> Int {
  let pairings = PairingSet(
    (0..<3).map { Pairing(uuid: uuid, major: 1, minor: UInt16($0), deviceId: "UNIT-\($0)") })
  var pipeline = BeaconPipeline(pairings: pairings)
  var steps = 0
  _ = rate(events, count) { i, event, time in
    steps &+= pipeline.ingest(event, at: time).count
    if i % 2000 == 0 { steps &+= pipeline.tick(at: time).count }
  }
  return steps
}

if let instructions {
  print("{\"inRange\": \(countedParseTrack(instructions)), \"steps\": \(countedPipeline(instructions))}")
  exit(0)
}

// 1. Core throughput.
for run in 0..<repeats {
  var frames = 0
  let parse = rate(ads, advertisements) { _, ad, _ in frames &+= BeaconFrameParser.parse(ad).frames.count }
  var tracker = PresenceTracker()
  let parseTrack = rate(ads, advertisements) { _, ad, time in
    for frame in BeaconFrameParser.parse(ad).frames { _ = tracker.observe(frame, from: ad, at: time) }
  }
  // The whole pipeline (presence, active beacon among 3 pairings, trips idle), ticking deadlines
  // once per simulated second as the bridge does.
  let pairings = PairingSet(
    (0..<3).map { Pairing(uuid: uuid, major: 1, minor: UInt16($0), deviceId: "UNIT-\($0)") })
  var pipeline = BeaconPipeline(pairings: pairings)
  let full = rate(events, advertisements) { i, event, time in
    _ = pipeline.ingest(event, at: time)
    if i % 2000 == 0 { _ = pipeline.tick(at: time) }
  }
  emit([
    "measure": "core", "run": run, "parse": parse, "parseTrack": parseTrack, "pipeline": full,
    "frames": frames, "inRange": tracker.inRange.count,
  ])
}

// 2. Trip-start snapshot latency with a beacon active.
final class BenchHost: ScopeHost {
  var configuration: BridgeConfiguration { BridgeConfiguration() }
  let snapshotAt = Mutex<Double>(0)
  func log(_ record: LogRecord) {}
  func onBeaconTripStart(_ trip: BeaconTripStart) async {
    let snapshot = await trip.snapshotActiveBeacon()
    precondition(snapshot != nil, "no active beacon at trip start")
    snapshotAt.withLock { $0 = monotonic() }
  }
  func postTripEventBatch(_ batch: TaggedTripBatch) async throws {}
}

let host = BenchHost()
let clock = ContinuousClock()
let bridge = BeaconBridge(host: host, clock: clock)
try await bridge.start()
await bridge.setPairings([Pairing(uuid: uuid, major: 1, minor: 0, deviceId: "UNIT-0")])
// Dwell: ≥ 2 sightings over ≥ 2 s, with 199 other beacons in range.
let dwellEnd = monotonic() + 2.3
var fed = 0
while monotonic() < dwellEnd {
  await bridge.ingest(.sighting(ads[fed & 4095]))
  fed += 1
  if fed % 200 == 0 { try await Task.sleep(for: .milliseconds(10)) }
}
for run in 0..<repeats {
  var samples: [Double] = []
  for trip in 0..<2000 {
    let id = try TripID("bench-\(run)-\(trip)")
    let start = monotonic()
    try await bridge.tripStart(id)
    samples.append(host.snapshotAt.withLock { $0 } - start)
    try await bridge.tripEnd(id)
    // Keep the beacon fresh, as the radio would.
    await bridge.ingest(.sighting(ads[trip % beacons]))
  }
  samples.sort()
  emit([
    "measure": "tripStart", "run": run, "p50": samples[samples.count / 2],
    "p99": samples[samples.count * 99 / 100], "max": samples.last!, "count": samples.count,
  ])
}
