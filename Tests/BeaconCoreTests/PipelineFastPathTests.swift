import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconCore

/// The pipeline's fast path for an advertisement holding one iBeacon and nothing else
/// (`BeaconFrameParser.soleIBeacon`) against the general path (`parse`, then every
/// frame), on varied advertisements: well-formed and malformed iBeacons, several manufacturer
/// data entries, AltBeacon, Eddystone service data, empty ones.
@Suite(.offThePool) struct PipelineFastPathTests {
  static let identities =
    [Fixtures.vanBeacon, Fixtures.otherVanBeacon, Fixtures.strangerBeacon]
    + (0..<20).map { BeaconIdentity(uuid: Fixtures.other, major: 3, minor: UInt16($0)) }
  static let addresses = (0..<8).map { BluetoothAddress(bytes: [0xC0, 0xFF, 0xEE, 0, 1, UInt8($0)])! }

  /// One random advertisement; about half are the fast path's case.
  static func advertisement(_ rng: inout SplitMix64) -> Advertisement {
    let identity = identities.randomElement(using: &rng)!
    let power = Int8.random(in: -80 ... -40, using: &rng)
    var iBeacon = Fixtures.iBeaconData(identity, power: power)
    var manufacturer: [ManufacturerData] = [iBeacon]
    var service: [ServiceData] = []
    switch Int.random(in: 0..<12, using: &rng) {
    case 0..<6: break
    case 6:
      // A malformed iBeacon: a length byte that does not fit.
      iBeacon.data[1] = 0x14
      manufacturer = [iBeacon]
    case 7:
      // Truncated.
      iBeacon.data.removeLast()
      manufacturer = [iBeacon]
    case 8:
      // Two entries: a second iBeacon, or another company's bytes.
      manufacturer.append(
        Bool.random(using: &rng)
          ? Fixtures.iBeaconData(identities.randomElement(using: &rng)!)
          : ManufacturerData(companyID: 0x0059, data: [1, 2, 3]))
    case 9:
      // Eddystone-UID service data beside the iBeacon.
      service = [
        ServiceData(
          uuid: .eddystone, data: [0x00, 0xEB] + Array(repeating: 7, count: 10) + [0, 0, 0, 0, 0, 1, 0, 0])
      ]
    case 10:
      // Another company's data with iBeacon-shaped bytes.
      manufacturer = [ManufacturerData(companyID: 0x0118, data: iBeacon.data)]
    default:
      manufacturer = []
    }
    let rssi: Int? = Int.random(in: 0..<10, using: &rng) == 0 ? nil : Int.random(in: -95 ... -40, using: &rng)
    return Advertisement(
      address: addresses.randomElement(using: &rng)!, rssi: rssi, manufacturerData: manufacturer,
      serviceData: service)
  }

  @Test func soleIBeaconIsWhatParseFindsWhenItAnswers() {
    var rng = SplitMix64(seed: 0x19_0001)
    var answered = 0
    for index in 0..<5_000 {
      let ad = Self.advertisement(&rng)
      let parsed = BeaconFrameParser.parse(ad)
      guard let frame = BeaconFrameParser.soleIBeacon(ad) else {
        // It may decline anything, but not the plain case it exists for.
        #expect(
          !(ad.manufacturerData.count == 1 && ad.serviceData.isEmpty && parsed.rejections.isEmpty
            && parsed.frames.count == 1
            && parsed.frames.first.map { if case .iBeacon = $0 { true } else { false } } == true),
          "#\(index) declined")
        continue
      }
      answered += 1
      #expect(Array(parsed.frames) == [.iBeacon(frame)], "#\(index)")
      #expect(parsed.rejections.isEmpty, "#\(index)")
    }
    #expect(answered > 2_000)
  }

  /// Two pipelines fed the same stream, one on the fast path and one on the general path, give
  /// the same steps for every call and end in the same state; paired beacons among them, so that
  /// the active beacon and its challenges run too.
  @Test func fastAndGeneralPathsGiveTheSameSteps() {
    var rng = SplitMix64(seed: 0x19_0002)
    let pairings = PairingSet([Fixtures.vanPairing, Fixtures.otherVanPairing])
    var fast = BeaconPipeline(pairings: pairings)
    var general = BeaconPipeline(pairings: pairings)
    var time = 0.0
    var steps = 0
    for index in 0..<6_000 {
      time += Double.random(in: 0...0.05, using: &rng)
      let at = Timestamp(seconds: time)
      let event: SourceEvent =
        Int.random(in: 0..<200, using: &rng) == 0
        ? .lost(Self.addresses.randomElement(using: &rng)!) : .sighting(Self.advertisement(&rng))
      let a = fast.ingest(event, at: at, fastPath: true)
      let b = general.ingest(event, at: at, fastPath: false)
      #expect(a == b, "#\(index)")
      steps += a.count
      if index % 300 == 0 {
        // Quiet spells, so that beacons exit and enter again.
        time += index % 1_200 == 0 ? 30 : 1
        #expect(fast.tick(at: Timestamp(seconds: time)) == general.tick(at: Timestamp(seconds: time)))
      }
    }
    #expect(steps > 100)
    #expect(fast.tracker.inRange == general.tracker.inRange)
    #expect(fast.selector.active == general.selector.active)
    #expect(fast.health.health == general.health.health)
    #expect(fast.health.ignoredFrames == general.health.ignoredFrames)
  }

  /// A source's batch ingested in place (`ingest(_:from:at:)`, as `BeaconBridge` does) gives the
  /// steps of its events ingested one by one, in order, and ends in the same state; each call
  /// stops after the first event with steps and leaves the index after it.
  @Test func aBatchGivesTheStepsOfItsEventsOneByOne() {
    var rng = SplitMix64(seed: 0x19_0003)
    let pairings = PairingSet([Fixtures.vanPairing, Fixtures.otherVanPairing])
    var batched = BeaconPipeline(pairings: pairings)
    var single = BeaconPipeline(pairings: pairings)
    var time = 0.0
    var steps = 0
    for round in 0..<300 {
      time += Double.random(in: 0...0.5, using: &rng)
      let at = Timestamp(seconds: time)
      let batch: [SourceEvent] = (0..<Int.random(in: 0...40, using: &rng)).map { _ in
        Int.random(in: 0..<100, using: &rng) == 0
          ? .lost(Self.addresses.randomElement(using: &rng)!) : .sighting(Self.advertisement(&rng))
      }
      let expected = batch.flatMap { single.ingest($0, at: at) }
      var got: [BeaconPipeline.Step] = []
      var index = 0
      var calls = 0
      batch.withUnsafeBufferPointer { events in
        while index < events.count {
          let before = index
          let more = batched.ingest(events, from: &index, at: at)
          calls += 1
          #expect(index > before, "#\(round): no progress")
          // Stopped at the first event with steps, or at the end.
          #expect(!more.isEmpty || index == events.count, "#\(round)")
          got += more
        }
      }
      #expect(got == expected, "#\(round)")
      #expect(calls <= batch.count)
      steps += got.count
      if round % 50 == 0 {
        time += 30
        #expect(batched.tick(at: Timestamp(seconds: time)) == single.tick(at: Timestamp(seconds: time)))
      }
    }
    #expect(steps > 100)
    #expect(batched.tracker.inRange == single.tracker.inRange)
    #expect(batched.selector.active == single.selector.active)
    #expect(batched.health.health == single.health.health)
  }
}
