import BeaconCore
import HCIParsing
import Synchronization
import Testing

@testable import HCI

@Suite struct CaptureReplayTests {
  @Test func aCaptureBecomesAScenario() async throws {
    var records: [BTSnoopCapture.Record] = []
    let base = BTSnoopCapture.Record.unixEpochOffset + 1_700_000_000_000_000
    records.append(
      .init(
        originalLength: 16, flags: 0, cumulativeDrops: 0, timestamp: base,
        data: [UInt8](repeating: 0, count: 16)))
    for i in 0..<5 {
      let event = ReportDecoderTests.iBeaconEvent(minor: 7)
      records.append(
        .init(
          originalLength: UInt32(event.count), flags: MonitorOpcode.eventPacket.flags(index: 0),
          cumulativeDrops: 0,
          timestamp: base + UInt64(i + 1) * 1_000_000, data: event))
    }
    let bytes = BTSnoopCapture(datalink: .monitor, records: records).bytes
    let replay = try CaptureReplay(bytes: bytes)
    #expect(replay.duration == 5)
    let scenario = replay.scenario()
    #expect(scenario.entries.map(\.at) == [1, 2, 3, 4, 5])
    #expect(scenario.end == 5)
    let lines = Lines()
    try await ScenarioRunner(scenario: scenario).run(emit: { lines.add($0.jsonLine) })
    #expect(lines.all.filter { $0.contains("\"beaconEntered\"") }.count == 1)
  }

  @Test func notACapture() {
    #expect(throws: BTSnoopError.self) { try CaptureReplay(bytes: Array("hello".utf8)) }
  }
}

final class Lines: Sendable {
  private let state = Mutex<[String]>([])
  func add(_ line: String) { state.withLock { $0.append(line) } }
  var all: [String] { state.withLock { $0 } }
}
