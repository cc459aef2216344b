import HCIParsing
import Testing

@Suite struct BTSnoopTests {
  static let address: [UInt8] = [0xC0, 0xFF, 0xEE, 0x00, 0x00, 0x07]

  static func advert(minor: UInt16, rssi: UInt8 = 0xC3, address: [UInt8] = address) -> [UInt8] {
    EventBytes.legacy([
      .init(
        address: address, data: EventBytes.iBeacon(uuid: EventBytes.fleetUUID, major: 1, minor: minor),
        rssi: rssi)
    ])
  }

  /// Two controllers: hci0 only sees a command-complete, hci1 scans.
  static func monitorCapture() -> [UInt8] {
    var w = SnoopWriter(datalink: 2001)
    w.newIndex(0, time: 1000)
    w.newIndex(1, time: 1000)
    w.monitor(index: 0, opcode: 3, time: 1000.5, data: [0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00])
    w.monitor(index: 1, opcode: 2, time: 1001, data: [0x0C, 0x20, 0x02, 0x01, 0x00])
    w.monitor(index: 1, opcode: 3, time: 1001.25, data: advert(minor: 7))
    w.monitor(index: 0, opcode: 12, time: 1001.5, data: Array("note".utf8))
    w.monitor(index: 1, opcode: 3, time: 1002.25, data: advert(minor: 7, rssi: 0x7F))
    return w.bytes
  }

  @Test func readsAMonitorCapture() throws {
    let capture = try BTSnoopCapture(bytes: Self.monitorCapture())
    #expect(capture.datalink == .monitor)
    #expect(capture.version == 1)
    #expect(capture.records.count == 7)
    #expect(capture.records[0].unixMicroseconds == 1_000_000_000)
    let packets = capture.packets
    #expect(packets.map(\.index) == [0, 1, 0, 1, 1, 0, 1])
    #expect(packets.map(\.kind) == [.other, .other, .event, .command, .event, .other, .event])
  }

  @Test func picksTheScanningController() throws {
    let reports = CaptureReports(capture: try BTSnoopCapture(bytes: Self.monitorCapture()))
    #expect(reports.controller == 1)
    #expect(reports.scanningControllers == [1])
    #expect(reports.reports.count == 2)
    #expect(reports.reports.map { reports.seconds($0.timestamp) } == [1.25, 2.25])
    #expect(reports.reports.map(\.report.rssi) == [-61, nil])
    #expect(reports.malformed.isEmpty)
  }

  @Test func anExplicitControllerIsUsedEvenIfQuiet() throws {
    let reports = CaptureReports(capture: try BTSnoopCapture(bytes: Self.monitorCapture()), controller: 0)
    #expect(reports.controller == 0)
    #expect(reports.reports.isEmpty)
  }

  @Test func otherControllersReportsAreNotMixedIn() throws {
    var w = SnoopWriter(datalink: 2001)
    w.monitor(index: 0, opcode: 3, time: 10, data: Self.advert(minor: 1))
    w.monitor(index: 1, opcode: 3, time: 11, data: Self.advert(minor: 2))
    w.monitor(index: 0, opcode: 3, time: 12, data: [0x3E, 0x03, 0x02, 0x01, 0x03])  // malformed
    let reports = CaptureReports(capture: try BTSnoopCapture(bytes: w.bytes))
    #expect(reports.controller == 0)
    #expect(reports.scanningControllers == [0, 1])
    #expect(reports.reports.count == 1)
    #expect(reports.malformed.map(\.record) == [2])
    #expect(reports.malformed.first?.error.kind == .truncatedParameters)
  }

  @Test func readsAnH4Capture() throws {
    var w = SnoopWriter(datalink: 1002)
    w.record(flags: 0x02, time: 50, data: [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00])
    w.h4Event(time: 50.5, event: Self.advert(minor: 7))
    w.h4Event(time: 51, event: [0x3E, 0x12, 0x0B, 0x01] + [UInt8](repeating: 0, count: 16))
    let capture = try BTSnoopCapture(bytes: w.bytes)
    #expect(capture.datalink == .hciUART)
    #expect(capture.packets.map(\.kind) == [.command, .event, .event])
    let reports = CaptureReports(capture: capture)
    #expect(reports.controller == nil)
    #expect(reports.reports.count == 1)
    #expect(reports.directedReports == 1)
    #expect(reports.seconds(reports.reports[0].timestamp) == 0.5)
  }

  @Test func roundTripsThroughItsOwnWriter() throws {
    let capture = try BTSnoopCapture(bytes: Self.monitorCapture())
    #expect(capture.bytes == Self.monitorCapture())
  }

  @Test func anEmptyCaptureHasNoRecords() throws {
    let capture = try BTSnoopCapture(bytes: SnoopWriter(datalink: 2001).bytes)
    #expect(capture.records.isEmpty)
    #expect(CaptureReports(capture: capture).start == nil)
  }

  static func kind(of bytes: [UInt8]) -> BTSnoopError.Kind? {
    do {
      _ = try BTSnoopCapture(bytes: bytes)
      return nil
    } catch { return error.kind }
  }

  @Test func wrongMagic() {
    #expect(
      Self.kind(of: SnoopWriter(datalink: 2001, magic: Array("btsnoox".utf8) + [0]).bytes) == .notBTSnoop)
    #expect(Self.kind(of: Array("{\"events\": []}".utf8)) == .notBTSnoop)
    #expect(Self.kind(of: []) == .notBTSnoop)
    #expect(Self.kind(of: Array("btsnoop".utf8)) == .notBTSnoop)
  }

  @Test func headerProblems() {
    #expect(Self.kind(of: Array(SnoopWriter(datalink: 2001).bytes.prefix(12))) == .truncatedHeader)
    #expect(Self.kind(of: SnoopWriter(datalink: 2001, version: 2).bytes) == .unsupportedVersion)
    #expect(Self.kind(of: SnoopWriter(datalink: 1001).bytes) == .unsupportedDatalink)
  }

  @Test func everyTruncationIsTyped() {
    let whole = Self.monitorCapture()
    for n in 16..<whole.count {
      let kind = Self.kind(of: Array(whole.prefix(n)))
      // A cut on a record boundary is a complete, shorter file; every other cut is a truncation.
      #expect(kind == nil || kind == .truncatedRecord, "cut at \(n): \(String(describing: kind))")
    }
    #expect(Self.kind(of: Array(whole.dropLast())) == .truncatedRecord)
  }

  @Test func includedLongerThanOriginal() {
    var w = SnoopWriter(datalink: 2001)
    w.monitor(index: 0, opcode: 3, time: 1, data: [0x0E, 0x00])
    var bytes = w.bytes
    bytes[16 + 3] = 1  // original length 1 < included 2
    #expect(Self.kind(of: bytes) == .malformedRecord)
  }

  @Test func errorsReadWell() {
    #expect(BTSnoopError(.notBTSnoop, "x").description.hasPrefix("not a btsnoop capture"))
    #expect(BTSnoopError(.truncatedRecord, "x").description.hasPrefix("truncated btsnoop capture"))
  }
}
