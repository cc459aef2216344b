import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

/// A damaged tail of advertising data is reported (issue 28): the AD structures before it are
/// kept, as BlueZ's `eir_parse` keeps them, and the damage is a `malformedTail` rejection with a
/// sentence, which `simulate` and `replay` print as a `rejected` line.
@Suite struct MalformedTailTests {
  /// (hex, structures kept, whether the tail is damaged)
  @Test(arguments: [
    ("", 0, false), ("00", 0, false), ("020106", 1, false), ("02010600", 1, false),
    ("020106" + String(repeating: "00", count: 28), 1, false),
    ("02", 0, true), ("0201", 0, true), ("02010603ff4c", 1, true), ("ff", 0, true), ("0201060002", 1, true),
    ("00020106", 0, true), ("020106000000000001", 1, true),
  ])
  func damageIsKeptOutAndNamed(hex: String, kept: Int, damaged: Bool) throws {
    let (structures, tail) = try AdvertisingDataParser.split(Fixture.bytes(hex)).get()
    #expect(structures.count == kept)
    #expect((tail != nil) == damaged)
    if let tail {
      #expect(tail.reason == .malformedTail)
      #expect(tail.detail.contains("the \(kept) AD structure(s) before it are kept"), "\(tail.detail)")
    }
  }

  @Test func theSentenceSaysWhereAndWhat() throws {
    let overrun = try AdvertisingDataParser.split(Fixture.bytes("02010603ff4c")).get().tail
    #expect(
      overrun?.detail
        == "the AD structure at byte 3 has length 3 but only 2 byte(s) follow; the 1 AD structure(s) before it are kept"
    )
    let stray = try AdvertisingDataParser.split(Fixture.bytes("020106000000ab")).get().tail
    #expect(
      stray?.detail
        == "advertising data ends with a zero length octet at byte 3 but byte 6 after it is 0xAB, not padding; the 1 AD structure(s) before it are kept"
    )
  }

  @Test func aSourceGetsTheSightingThenTheRejection() throws {
    let good = Fixtures.iBeaconPDU(Fixtures.vanBeacon)
    let events = Advertisement.sourceEvents(
      address: Fixtures.vanAddress, rssi: -60, adStructures: good + [0x05, 0xFF, 0x4C])
    #expect(events.count == 2)
    guard case .sighting(let ad) = events.first, case .rejected(let address, let rejection) = events.last
    else {
      Issue.record("expected a sighting and a rejection, got \(events)")
      return
    }
    #expect(BeaconFrameParser.parse(ad).frames.first?.beaconID == .iBeacon(Fixtures.vanBeacon))
    #expect(address == Fixtures.vanAddress)
    #expect(rejection.reason == .malformedTail)
    #expect(
      Advertisement.sourceEvents(address: Fixtures.vanAddress, rssi: -60, adStructures: good).count == 1)
  }

  /// Through a scenario, as `simulate` plays it: the beacon enters, and the tail is a `rejected`
  /// event with its reason.
  @Test func aScenarioReportsTheTailAndKeepsTheBeacon() async throws {
    let hex = Fixtures.iBeaconPDU(Fixtures.vanBeacon).map { String(format: "%02x", $0) }.joined() + "07ff4c00"
    let json =
      #"{"events": [{"at": 1, "advertisement": {"address": "C0:FF:EE:00:00:07", "rssi": -60, "rawHex": "\#(hex)"}}]}"#
    let scenario = try Scenario.decode(Data(json.utf8))
    let log = EventLog()
    try await ScenarioRunner(scenario: scenario).run(emit: log.observer)
    #expect(log.count("beaconEntered") == 1)
    let rejected = log.events.compactMap { timed -> FrameRejection? in
      if case .rejected(_, let rejection) = timed.event { return rejection }
      return nil
    }
    #expect(rejected.map(\.reason) == [.malformedTail])
  }
}
