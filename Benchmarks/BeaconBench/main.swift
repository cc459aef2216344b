// `make bench`, in-process part: BeaconCore throughput and trip-start snapshot latency.
// Prints one JSON object per measurement on stdout; Benchmarks/run.py tabulates them.
//
//   BeaconBench [--repeats N] [--advertisements M]
//   BeaconBench --instructions N            (make bench-check, Benchmarks/instructions.py)
//   BeaconBench --scaling beacons|paired|departed|trips|batch|outbox N   (make bench-scaling, Benchmarks/scaling.py)

import BeaconCore
import BeaconCrypto
import BridgeDaemon
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
/// `--scaling MODE N`: only run `countedScaling` over an input of size N (Benchmarks/scaling.py).
var scaling: (mode: String, size: Int)?
/// `--cold-search`: the time a search for a stranger's EID takes at the caps (docs/authentication.md).
var coldSearch = false
var arguments = CommandLine.arguments.dropFirst()
while let flag = arguments.popFirst() {
  switch flag {
  case "--cold-search": coldSearch = true
  case "--repeats": repeats = Int(arguments.popFirst() ?? "") ?? repeats
  case "--advertisements": advertisements = Int(arguments.popFirst() ?? "") ?? advertisements
  case "--instructions": instructions = Int(arguments.popFirst() ?? "")
  case "--scaling":
    let mode = arguments.popFirst() ?? ""
    guard ["beacons", "paired", "departed", "trips", "batch", "outbox", "outbox-filled"].contains(mode),
      let size = Int(arguments.popFirst() ?? ""),
      size > 0
    else {
      FileHandle.standardError.write(
        Data("usage: BeaconBench --scaling beacons|paired|departed|trips|batch|outbox|outbox-filled N\n".utf8)
      )
      exit(2)
    }
    scaling = (mode, size)
  default:
    FileHandle.standardError.write(
      Data(
        "usage: BeaconBench [--repeats N] [--advertisements M] [--instructions N] [--scaling MODE N] [--cold-search]\n"
          .utf8))
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
    (0..<3).map {
      Pairing(uuid: uuid, major: 1, minor: UInt16($0), deviceId: DeviceID(stringLiteral: "UNIT-\($0)"))
    })
  var pipeline = BeaconPipeline(pairings: pairings)
  var steps = 0
  _ = rate(events, count) { i, event, time in
    steps &+= pipeline.ingest(event, at: time).count
    if i % 2000 == 0 { steps &+= pipeline.tick(at: time).count }
  }
  return steps
}

/// The same pipeline with 100 pairings of each kind, for the cost of authentication
/// (`make bench-check`'s eidPipeline ÷ plainPipeline): 100 beacons heard round robin at 2,000 a
/// second, either iBeacons paired by identity or Eddystone-EID beacons paired by key, each
/// sending its EID of the moment (the resolver's table answers it: one lookup per advertisement).
let keyedBeacons = 100

func keyedAddress(_ beacon: Int) -> BluetoothAddress {
  BluetoothAddress(bytes: [0xC0, 0xFF, 0xEE, 0x00, 0x01, UInt8(beacon)])!
}

let plainEvents: [SourceEvent] = (0..<4096).map { i in
  let beacon = i % keyedBeacons
  return .sighting(
    Advertisement(
      address: keyedAddress(beacon), rssi: -55 - (i / keyedBeacons) % 20,
      manufacturerData: [
        ManufacturerData(companyID: BeaconFrameParser.appleCompanyID, data: iBeacon(minor: UInt16(beacon)))
      ]))
}

/// Each beacon's identity key (distinct, arbitrary) and the clock it is paired at.
func identityKey(_ beacon: Int) -> AES128Key {
  let bytes = (0..<16).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ beacon &* 7 &+ 1) }
  return bytes.withUnsafeBytes { try! AES128Key(bytes: $0) }
}
let eidExponent = RotationExponent(rawValue: 10)!
let eidClock: UInt32 = 65_280

let eidEvents: [SourceEvent] = {
  let frames = (0..<keyedBeacons).map { beacon in
    [0x30, 0xC5]
      + EddystoneEID.bytes(
        of: EddystoneEID.eid(identityKey: identityKey(beacon), rotationExponent: eidExponent, clock: eidClock)
      )
  }
  return (0..<4096).map { i in
    let beacon = i % keyedBeacons
    return .sighting(
      Advertisement(
        address: keyedAddress(beacon), rssi: -55 - (i / keyedBeacons) % 20,
        serviceData: [ServiceData(uuid: .eddystone, data: frames[beacon])]))
  }
}()

@inline(__always)
func keyedPipeline(_ pipeline: inout BeaconPipeline, _ input: [SourceEvent], _ count: Int) -> Int {
  var steps = 0
  _ = rate(input, count) { i, event, time in
    steps &+= pipeline.ingest(event, at: time).count
    if i % 2000 == 0 { steps &+= pipeline.tick(at: time).count }
  }
  return steps
}

/// 100 iBeacons, each paired by identity (`--toggle-collect=*countedPlainPipeline*`).
@inline(never)
func countedPlainPipeline(_ count: Int) -> Int {
  let pairings = PairingSet(
    (0..<keyedBeacons).map {
      Pairing(uuid: uuid, major: 1, minor: UInt16($0), deviceId: DeviceID(stringLiteral: "UNIT-\($0)"))
    })
  var pipeline = BeaconPipeline(pairings: pairings)
  return keyedPipeline(&pipeline, plainEvents, count)
}

/// 100 Eddystone-EID beacons, each paired by key (`--toggle-collect=*countedEIDPipeline*`).
@inline(never)
func countedEIDPipeline(_ count: Int) -> Int {
  var authenticator = KeyAuthenticator(eidClockTolerance: 86_400, epoch: 0)
  var pairings: [Pairing] = []
  for beacon in 0..<keyedBeacons {
    let id = KeyPairingID(beacon + 1)
    authenticator.add(
      eid: EIDPairing(
        id: id, identityKey: identityKey(beacon), rotationExponent: eidExponent, beaconClock: eidClock,
        atBoxSeconds: 0))
    pairings.append(
      Pairing(
        key: KeyedIdentity(scheme: .eid, pairing: id.rawValue), deviceId: try! DeviceID("UNIT-E\(beacon)")))
  }
  var pipeline = BeaconPipeline(pairings: PairingSet(pairings))
  pipeline.setAuthenticator(authenticator)
  return keyedPipeline(&pipeline, eidEvents, count)
}

/// One advertisement of beacon `n` (a distinct iBeacon identity and address per n).
func scalingAdvertisement(_ n: Int, rssi: Int) -> SourceEvent {
  .sighting(
    Advertisement(
      address: BluetoothAddress(bytes: [
        0xC0, 0xFF, 0xEE, UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF),
      ])!,
      rssi: rssi,
      manufacturerData: [
        ManufacturerData(
          companyID: BeaconFrameParser.appleCompanyID,
          data: {
            var bytes: [UInt8] = [0x02, 0x15]
            withUnsafeBytes(of: uuid.uuid) { bytes += $0 }
            bytes += [
              UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), 0xC5,
            ]
            return bytes
          }())
      ]))
}

/// Every advertisement of `input`, 1 ms apart, with a deadline step after each one that is due:
/// as `simulate` steps between scenario entries.
@inline(__always)
func stream(_ pipeline: inout BeaconPipeline, _ input: [SourceEvent]) -> Int {
  var work = 0
  for (i, event) in input.enumerated() {
    let time = Timestamp(seconds: Double(i) * 0.001)
    work &+= pipeline.ingest(event, at: time).count
    if let due = pipeline.nextDeadline, due <= time { work &+= pipeline.tick(at: time).count }
  }
  return work
}

/// The work whose growth `make bench-scaling` bounds (`--toggle-collect=*countedScaling*`): the
/// input is built outside it, so only what the core does with the input is counted.
@inline(never)
func countedScaling(_ mode: String, _ size: Int, _ input: [SourceEvent], _ text: [UInt8]) -> Int {
  var pipeline = BeaconPipeline()
  var work = 0
  switch mode {
  case "beacons":
    // Every beacon in range, each sighted 8 times, a deadline step after every advertisement.
    work = stream(&pipeline, input)
  case "paired":
    // As "beacons", each beacon paired by its identity (a fleet's document of N pairings), and
    // one pairing of the whole UUID beside them.
    let pairings = (0..<size).map { n in
      Pairing(
        uuid: uuid, major: UInt16(n >> 16), minor: UInt16(n & 0xFFFF),
        deviceId: DeviceID(stringLiteral: "UNIT-\(n)"))
    }
    pipeline = BeaconPipeline(
      pairings: PairingSet(pairings + [Pairing(uuid: uuid, major: nil, minor: nil, deviceId: "FLEET")]))
    work = stream(&pipeline, input)
  case "departed":
    // N paired beacons (one pairing of the whole UUID) each heard 8 times in a row and then
    // gone: the departed, watched for silence, grow to N while deadlines are stepped after
    // every advertisement.
    var settings = BridgeConfiguration()
    settings.presence.exitTimeout = 1
    settings.presence.exitTimeoutMax = 1
    pipeline = BeaconPipeline(
      configuration: settings,
      pairings: PairingSet([Pairing(uuid: uuid, major: nil, minor: nil, deviceId: "FLEET")]))
    work = stream(&pipeline, input)
  case "trips":
    var settings = BridgeConfiguration()
    settings.trips.maxOpenTrips = 100_000
    pipeline = BeaconPipeline(configuration: settings)
    // Built at the door (`TripID`), as the D-Bus and CLI doors build them.
    let tripIds = (0..<size).compactMap { try? TripID("trip-\($0)") }
    for i in 0..<size {
      let time = Timestamp(seconds: Double(i) * 0.001)
      work &+= ((try? pipeline.startTrip(tripIds[i], at: time)) ?? []).count
      if let due = pipeline.nextDeadline, due <= time { work &+= pipeline.tick(at: time).count }
    }
    // While they stay open: one advertisement and one deadline step per trip.
    for (i, event) in input.enumerated() {
      let time = Timestamp(seconds: Double(size + i) * 0.001)
      work &+= pipeline.ingest(event, at: time).count
      if let due = pipeline.nextDeadline, due <= time { work &+= pipeline.tick(at: time).count }
    }
    for i in 0..<size {
      work &+= ((try? pipeline.endTrip(tripIds[i], at: Timestamp(seconds: 1e6))) ?? []).count
    }
  default:
    // One batch: decoded from its text, numbered and taken, and written out as the upload
    // body's events would be.
    guard let events = try? TripEvent.batch(fromJSON: text) else { return -1 }
    var settings = BridgeConfiguration()
    settings.trips.configuredDeviceId = "UNIT-1"
    pipeline = BeaconPipeline(configuration: settings)
    _ = try? pipeline.startTrip("t", at: .zero)
    _ = pipeline.hookFinished(for: "t", at: .zero)
    guard let batch = try? pipeline.numberBatch("t", events: events, at: .zero),
      let steps = try? pipeline.tripEvents(batch)
    else { return -1 }
    for case .post(let tagged) in steps {
      work &+= JSONValue.array(tagged.events.map(\.json)).compactText.utf8.count
    }
  }
  return work
}

/// A stranger's EID against 10,000 EID pairings at K = 0 with a week of tolerance (the caps):
/// the near search timed whole, the whole-tolerance search timed for 2 s and its total worked
/// out from the bound, at the rate measured and at `EIDSearchService`'s pace, and whether the
/// limit on a cold search (`ColdSearchLimit`) refuses that configuration at load.
if coldSearch {
  let pairings = 10_000
  let tolerance = EIDResolver.Configuration.maximumTolerance
  let k = RotationExponent(rawValue: 0)!
  var resolver = EIDResolver(configuration: .init(tolerance: tolerance))
  var seed: UInt64 = 0x5EED
  for n in 0..<pairings {
    let key = (0..<16).map { _ in
      seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return UInt8(truncatingIfNeeded: seed >> 33)
    }
    resolver.add(
      EIDPairing(
        id: KeyPairingID(n), identityKey: try! key.withUnsafeBytes { try AES128Key(bytes: $0) },
        rotationExponent: k,
        clockOffset: 0))
  }
  let clock = ContinuousClock()
  func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
  }
  var near = resolver.search(for: 0xDEAD_BEEF, atBoxSeconds: 1_000_000_000, near: true)
  var started = clock.now
  while near.run(operations: 1 << 30) == .searching {}
  let nearSeconds = seconds(clock.now - started)
  var far = resolver.search(for: 0xDEAD_BEEF, atBoxSeconds: 1_000_000_000, near: false)
  started = clock.now
  while seconds(clock.now - started) < 2, far.run(operations: 2_000) == .searching {}
  let rate = Double(far.operations) / seconds(clock.now - started)
  let farOperations =
    Double(pairings) * Double(EIDResolver.searchOperations(tolerance: tolerance, rotationExponent: k))
  // The caps as a daemon's configuration: past `ColdSearchLimit`, refused at load.
  let refused =
    ColdSearchLimit.refusal(
      eidClockTolerance: Double(tolerance), rotationExponents: Array(repeating: 0, count: pairings)) != nil
  print(
    "{\"pairings\": \(pairings), \"rotationExponent\": 0, \"toleranceSeconds\": \(tolerance), "
      + "\"nearOperations\": \(near.operations), \"nearSeconds\": \(nearSeconds), "
      + "\"operationsPerSecond\": \(Int(rate)), \"farOperations\": \(Int(farOperations)), "
      + "\"farSecondsAtThatRate\": \(Int(farOperations / rate)), "
      + "\"farSecondsAtTheServicePace\": \(Int(farOperations / Double(ColdSearchLimit.operationsPerSecond))), "
      + "\"limitSeconds\": \(ColdSearchLimit.maximumSeconds), \"refusedAtLoad\": \(refused)}"
  )
  exit(0)
}

/// The host of the outbox's scaling: it takes every batch.
final class OutboxHost: ScopeHost {
  var configuration: BridgeConfiguration {
    var settings = BridgeConfiguration()
    settings.trips.configuredDeviceId = "UNIT-1"
    settings.trips.sending = .postTrip
    return settings
  }
  let posted = Mutex(0)
  func log(_ record: LogRecord) {}
  func postTripEventBatch(_ batch: TaggedTripBatch) async throws {
    posted.withLock { $0 += batch.events.count }
  }
}

/// The outbox's scaling (`--scaling outbox N`): N batches of a postTrip trip committed to the
/// daemon's store, then the trip's end, which drains them through the bridge's queue (read a
/// window at a time, each delivery deleted). The drain runs on the concurrency pool, where
/// callgrind's `--toggle-collect` cannot follow it, so Benchmarks/scaling.py counts the whole
/// process and subtracts `outbox-filled` (the same run without the end): what is left is the
/// drain's own work.
func scalingOutbox(_ size: Int, drain: Bool) async -> Int {
  let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
  let dir = base + "/beaconbench-outbox-\(getpid())"
  defer { try? FileManager.default.removeItem(atPath: dir) }
  guard let store = try? Store(directory: dir) else { return -1 }
  await store.setOutboxLimit(size + 1)
  let host = OutboxHost()
  let bridge = BeaconBridge(host: host, journal: store)
  let trip: TripID = "t"
  guard (try? await bridge.start()) != nil else { return -1 }
  do {
    try await bridge.tripStart(trip)
    let events = try TripEvent.batch(fromJSON: Array(#"[{"type":"braking","g":0.41}]"#.utf8))
    for _ in 0..<size { try await bridge.tripEvents(trip, events: events) }
    if drain { try await bridge.tripEnd(trip) }
  } catch {
    return -1
  }
  return host.posted.withLock { $0 }
}

if let scaling, scaling.mode.hasPrefix("outbox") {
  // On the pool, the main thread blocked on a semaphore: a main thread that awaits parks in
  // dispatch_main's sigsuspend, whose mask valgrind cannot write (it stops with SIGSEGV).
  let done = DispatchSemaphore(value: 0)
  Task.detached {
    let work = await scalingOutbox(scaling.size, drain: scaling.mode == "outbox")
    print("{\"mode\": \"\(scaling.mode)\", \"size\": \(scaling.size), \"work\": \(work)}")
    exit(work < 0 ? 1 : 0)
  }
  done.wait()
}

if let scaling {
  let input: [SourceEvent]
  var text: [UInt8] = []
  switch scaling.mode {
  case "beacons", "paired":
    input = (0..<scaling.size * 8).map { scalingAdvertisement($0 % scaling.size, rssi: -60 - $0 % 20) }
  case "departed":
    input = (0..<scaling.size * 8).map { scalingAdvertisement($0 / 8, rssi: -60) }
  case "trips":
    input = (0..<scaling.size).map { scalingAdvertisement($0 % 50, rssi: -60) }
  default:
    input = []
    let events = (0..<scaling.size).map { i in
      #"{"type":"braking","at":\#(i).25,"g":0.41,"big":18446744073709551615,"note":"n\u00e9 \#(i)"}"#
    }
    text = Array(("[" + events.joined(separator: ",") + "]").utf8)
  }
  print(
    "{\"mode\": \"\(scaling.mode)\", \"size\": \(scaling.size), \"work\": \(countedScaling(scaling.mode, scaling.size, input, text))}"
  )
  exit(0)
}

if let instructions {
  print(
    "{\"inRange\": \(countedParseTrack(instructions)), \"steps\": \(countedPipeline(instructions)), "
      + "\"plainSteps\": \(countedPlainPipeline(instructions)), \"eidSteps\": \(countedEIDPipeline(instructions))}"
  )
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
    (0..<3).map {
      Pairing(uuid: uuid, major: 1, minor: UInt16($0), deviceId: DeviceID(stringLiteral: "UNIT-\($0)"))
    })
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
