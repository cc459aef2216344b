import HCIParsing
import Testing

@Suite struct HCIEventTests {
  static let addressA: [UInt8] = [0xC0, 0xFF, 0xEE, 0x00, 0x00, 0x07]
  static let addressB: [UInt8] = [0xC0, 0xFF, 0xEE, 0x00, 0x00, 0x09]
  static let addressC: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x01]

  /// beacontools tests/test_scanner.py `test_process_packet` (an Eddystone-TLM report from
  /// 1c:d6:cd:ef:94:35 at -28 dBm), without its leading H4 byte and with the parameter length
  /// corrected from 0x41 to 0x25: beacontools never checks it, and 37 bytes follow.
  static let beacontoolsTLM: [UInt8] = [
    0x3E, 0x25, 0x02, 0x01, 0x03, 0x01, 0x35, 0x94, 0xEF, 0xCD, 0xD6, 0x1C, 0x19, 0x02, 0x01, 0x06, 0x03,
    0x03,
    0xAA, 0xFE, 0x11, 0x16, 0xAA, 0xFE, 0x20, 0x00, 0x0B, 0x18, 0x13, 0x00, 0x00, 0x00, 0x14, 0x67, 0x00,
    0x00,
    0x2A, 0xC4, 0xE4,
  ]

  @Test func publicVectorFromBeacontools() throws {
    guard case .advertisingReports(let reports) = try HCIEvent.parse(Self.beacontoolsTLM) else {
      Issue.record("not an advertising report")
      return
    }
    #expect(reports.count == 1)
    #expect(reports[0].address.description == "1C:D6:CD:EF:94:35")
    #expect(reports[0].addressType == 0x01)
    #expect(reports[0].eventType == 0x03)
    #expect(reports[0].rssi == -28)
    #expect(reports[0].data.count == 25)
    #expect(reports[0].data.prefix(7) == [0x02, 0x01, 0x06, 0x03, 0x03, 0xAA, 0xFE])
  }

  @Test func beacontoolsVectorAsPublishedIsRejected() {
    // The published bytes announce 0x41 parameter bytes and carry 37: a length mismatch, typed.
    var published = Self.beacontoolsTLM
    published[1] = 0x41
    #expect(throws: HCIEventError.self) { try HCIEvent.parse(published) }
    do { _ = try HCIEvent.parse(published) } catch { #expect(error.kind == .lengthMismatch) }
  }

  /// beacontools issue #78: several reports in one event. Each is read in turn, with its own data
  /// length and RSSI, zero-length data and RSSI 127 included.
  @Test func severalReportsInOneEvent() throws {
    let beacon = EventBytes.iBeacon(uuid: EventBytes.fleetUUID, major: 1, minor: 7)
    let bytes = EventBytes.legacy([
      .init(eventType: 0x03, addressType: 0x00, address: Self.addressA, data: beacon, rssi: 0xC3),
      .init(eventType: 0x04, addressType: 0x01, address: Self.addressB, data: [], rssi: 0x7F),
      .init(
        eventType: 0x00, addressType: 0x01, address: Self.addressC, data: [0x02, 0x01, 0x06], rssi: 0xB0),
    ])
    guard case .advertisingReports(let reports) = try HCIEvent.parse(bytes) else {
      Issue.record("not an advertising report")
      return
    }
    #expect(reports.map(\.address.bytes) == [Self.addressA, Self.addressB, Self.addressC])
    #expect(reports.map(\.rssi) == [-61, nil, -80])
    #expect(reports.map(\.data) == [beacon, [], [0x02, 0x01, 0x06]])
    #expect(reports.map(\.addressType) == [0, 1, 1])
    #expect(reports[1].isScanResponse)
    #expect(!reports[0].isScanResponse)
    #expect(reports.allSatisfy { $0.format == .legacy && $0.dataStatus == .complete })
  }

  @Test(arguments: [
    // (parameters after the event header, expected error)
    (
      [0x02, 0x01, 0x03, 0x01, 1, 2, 3, 4, 5, 6, 0x05, 0x02, 0x01] as [UInt8],
      HCIEventError.Kind.truncatedParameters
    ),
    ([0x02, 0x01, 0x03, 0x01, 1, 2, 3, 4, 5, 6, 0x00], .truncatedParameters),  // no RSSI
    ([0x02, 0x01, 0x03, 0x01, 1, 2, 3], .truncatedParameters),  // header cut
    ([0x02, 0x00], .invalidReportCount),
    ([0x02, 0x1A], .invalidReportCount),
    ([0x02], .truncatedParameters),  // no Num_Reports
    ([0x02, 0x01, 0x03, 0x01, 1, 2, 3, 4, 5, 6, 0x00, 0xC0, 0xAA], .trailingBytes),
    ([0x02, 0x01, 0x03, 0x01, 1, 2, 3, 4, 5, 6, 0x20] + [UInt8](repeating: 0, count: 33), .dataTooLong),
    // Num_Reports says 2, one report present.
    ([0x02, 0x02, 0x03, 0x01, 1, 2, 3, 4, 5, 6, 0x00, 0xC0], .truncatedParameters),
    ([0x0D, 0x01, 0x00, 0x00], .truncatedParameters),
    ([0x0B, 0x01] + [UInt8](repeating: 0, count: 15), .truncatedParameters),
    ([0x0B, 0x01] + [UInt8](repeating: 0, count: 17), .trailingBytes),
    ([] as [UInt8], .truncatedParameters),  // LE Meta without a subevent
  ])
  func malformedLEMetaIsTyped(parameters: [UInt8], kind: HCIEventError.Kind) {
    do {
      let event = try HCIEvent.parse(EventBytes.event(0x3E, parameters))
      Issue.record("parsed \(event)")
    } catch {
      #expect(error.kind == kind, "\(error)")
    }
  }

  @Test func dataLengthPastTheEndOfTheEvent() {
    // Data_Length 0x1F with 4 bytes of data: the classic read past the end.
    let bytes = EventBytes.event(
      0x3E, [0x02, 0x01, 0x00, 0x00] + Self.addressA + [0x1F, 0x02, 0x01, 0x06, 0xC0])
    #expect(
      throws: HCIEventError(
        .truncatedParameters, "LE Advertising Report: report 1 has Data_Length 31 but only 4 bytes remain")
    ) {
      try HCIEvent.parse(bytes)
    }
  }

  @Test(arguments: [[] as [UInt8], [0x3E], [0x3E, 0x05, 0x02]])
  func shortHeaderOrLength(bytes: [UInt8]) {
    #expect(throws: HCIEventError.self) { try HCIEvent.parse(bytes) }
  }

  @Test func everyPrefixOfAValidEventIsATypedError() {
    let bytes = EventBytes.legacy([
      .init(
        address: Self.addressA, data: EventBytes.iBeacon(uuid: EventBytes.fleetUUID, major: 1, minor: 7),
        rssi: 0xC3),
      .init(address: Self.addressB, data: [0x02, 0x01, 0x06], rssi: 0x7F),
    ])
    for n in 0..<bytes.count {
      #expect(throws: HCIEventError.self) { try HCIEvent.parse(bytes.prefix(n)) }
      // A correct length octet with the body cut short.
      if n >= 2 {
        var cut = Array(bytes.prefix(n))
        cut[1] = UInt8(n - 2)
        #expect(throws: HCIEventError.self) { try HCIEvent.parse(cut) }
      }
    }
  }

  @Test func extendedReportFields() throws {
    let data = EventBytes.iBeacon(uuid: EventBytes.fleetUUID, major: 1, minor: 9)
    let bytes = EventBytes.extended([
      .init(eventType: 0x0010, address: Self.addressA, sid: 0xFF, txPower: 0x7F, rssi: 0xC8, data: data),
      .init(eventType: 0x0000, address: Self.addressB, sid: 0x03, txPower: 0xF4, rssi: 0x7F, data: []),
    ])
    guard case .extendedAdvertisingReports(let reports) = try HCIEvent.parse(bytes) else {
      Issue.record("not an extended report")
      return
    }
    #expect(reports.count == 2)
    #expect(reports[0].format == .extended)
    #expect(reports[0].sid == nil)
    #expect(reports[0].txPower == nil)
    #expect(reports[0].rssi == -56)
    #expect(reports[0].data == data)
    #expect(reports[1].sid == 3)
    #expect(reports[1].txPower == -12)
    #expect(reports[1].rssi == nil)
    #expect(reports[1].data.isEmpty)
  }

  @Test func extendedReservedDataStatusAndLongData() {
    let reserved = EventBytes.extended([
      .init(eventType: 0x0060, address: Self.addressA, rssi: 0xC0, data: [])
    ])
    #expect(throws: HCIEventError.self) { try HCIEvent.parse(reserved) }
    var long = EventBytes.extended([.init(address: Self.addressA, rssi: 0xC0, data: [])])
    long[long.count - 1] = 230
    long[1] = UInt8(long.count - 2)
    // 230 bytes of data cannot follow a 26-byte report header in one event (parameters ≤ 255), so
    // the report is cut short, as the kernel's pull of its data fails.
    do {
      _ = try HCIEvent.parse(long)
      Issue.record("parsed")
    } catch { #expect(error.kind == .truncatedParameters) }
  }

  @Test func fragmentedExtendedReportIsReassembled() throws {
    let payload = EventBytes.iBeacon(uuid: EventBytes.fleetUUID, major: 1, minor: 7)
    let first = Array(payload.prefix(10))
    let second = Array(payload.dropFirst(10).prefix(10))
    let third = Array(payload.dropFirst(20))
    // Another advertiser's fragments interleave; each stream is kept apart.
    let events = [
      EventBytes.extended([
        .init(eventType: 0x0020, address: Self.addressA, sid: 1, rssi: 0xC0, data: first),
        .init(eventType: 0x0020, address: Self.addressB, sid: 1, rssi: 0xB0, data: [0x02, 0x01]),
      ]),
      EventBytes.extended([.init(eventType: 0x0020, address: Self.addressA, sid: 1, rssi: 0xC1, data: second)]
      ),
      EventBytes.extended([
        .init(eventType: 0x0000, address: Self.addressA, sid: 1, rssi: 0xC2, data: third),
        .init(eventType: 0x0040, address: Self.addressB, sid: 1, rssi: 0xB1, data: [0x06]),
      ]),
    ]
    var assembler = ExtendedReportAssembler()
    var whole: [AdvertisingReport] = []
    for bytes in events {
      guard case .extendedAdvertisingReports(let reports) = try HCIEvent.parse(bytes) else {
        Issue.record("not an extended report")
        return
      }
      for report in reports { if let done = assembler.add(report) { whole.append(done) } }
    }
    #expect(whole.count == 2)
    #expect(whole[0].data == payload)
    #expect(whole[0].dataStatus == .complete)
    #expect(whole[0].rssi == -62)  // the last fragment's
    #expect(whole[1].data == [0x02, 0x01, 0x06])
    #expect(whole[1].dataStatus == .incompleteTruncated)
    #expect(assembler.pendingCount == 0)
  }

  @Test func assemblerBoundsMemory() {
    var assembler = ExtendedReportAssembler()
    // One stream past 1650 bytes comes out truncated.
    let chunk = [UInt8](repeating: 0xAA, count: 229)
    var out: AdvertisingReport?
    for _ in 0..<8 {
      out = assembler.add(
        AdvertisingReport(
          format: .extended, eventType: 0x20, addressType: 1, address: DeviceAddress(bytes: Self.addressA),
          rssi: -60, sid: 1, dataStatus: .incompleteMoreToCome, data: chunk))
      if out != nil { break }
    }
    #expect(out?.dataStatus == .incompleteTruncated)
    #expect(out?.data.count == ExtendedReportAssembler.maximumLength)
    // Many advertisers that never finish: the oldest are dropped.
    for i in 0..<(ExtendedReportAssembler.maximumPending + 5) {
      _ = assembler.add(
        AdvertisingReport(
          format: .extended, eventType: 0x20, addressType: 1,
          address: DeviceAddress(bytes: [0, 0, 0, 0, UInt8(i >> 8), UInt8(i & 0xFF)]), rssi: nil,
          sid: 0, dataStatus: .incompleteMoreToCome, data: [1]))
    }
    #expect(assembler.pendingCount == ExtendedReportAssembler.maximumPending)
    #expect(assembler.evicted == 5)
  }

  @Test func legacyReportPassesTheAssemblerUnchanged() {
    var assembler = ExtendedReportAssembler()
    let report = AdvertisingReport(
      format: .legacy, eventType: 3, addressType: 0, address: DeviceAddress(bytes: Self.addressA), rssi: -50,
      data: [1, 2])
    #expect(assembler.add(report) == report)
  }

  @Test func directedReportsAreCountedAndIgnored() throws {
    let one: [UInt8] = [0x01, 0x01] + Self.addressA + [0x01] + Self.addressB + [0xC0]
    #expect(
      try HCIEvent.parse(EventBytes.event(0x3E, [0x0B, 0x02] + one + one))
        == .directedAdvertisingReports(count: 2))
  }

  @Test func commandCompleteStatusAndOthers() throws {
    #expect(
      try HCIEvent.parse([0x0E, 0x04, 0x01, 0x0B, 0x20, 0x00])
        == .commandComplete(opcode: 0x200B, returnParameters: [0x00]))
    #expect(
      try HCIEvent.parse([0x0F, 0x04, 0x0C, 0x01, 0x0C, 0x20]) == .commandStatus(status: 0x0C, opcode: 0x200C)
    )
    #expect(try HCIEvent.parse([0x05, 0x01, 0xAA]) == .other(code: 0x05, parameters: [0xAA]))
    #expect(try HCIEvent.parse([0x3E, 0x02, 0x01, 0x00]) == .leMeta(subevent: 0x01, parameters: [0x00]))
    #expect(throws: HCIEventError.self) { try HCIEvent.parse([0x0E, 0x02, 0x01, 0x0B]) }
    #expect(throws: HCIEventError.self) { try HCIEvent.parse([0x0F, 0x03, 0x00, 0x01, 0x0C]) }
  }

  // MARK: Damage in a later report (kernel hci_le_adv_report_evt)

  /// The kernel's `hci_le_adv_report_evt` (net/bluetooth/hci_event.c) pulls each report's header,
  /// then its data and RSSI, and processes it before the next: a report whose Data_Length exceeds
  /// 31 but whose bytes are present is dropped ("Dropping invalid advertising data") and reading
  /// goes on; a report cut short ends the event. Hand-built vectors from the Core spec's layout.
  @Test func laterDamageKeepsEarlierReports() throws {
    let good = EventBytes.Legacy(address: Self.addressA, data: [0x02, 0x01, 0x06], rssi: 0xC0)
    let long = EventBytes.Legacy(
      address: Self.addressB, data: [UInt8](repeating: 0x11, count: 32), rssi: 0xC1)
    let third = EventBytes.Legacy(address: Self.addressB, data: [0x02, 0x0A, 0x00], rssi: 0xC2)
    do {
      _ = try HCIEvent.parse(EventBytes.legacy([good, long, third]))
      Issue.record("a 32-byte legacy report parsed")
    } catch {
      #expect(error.kind == .dataTooLong)
      #expect(error.deliveredReports.map(\.rssi) == [-64, -62])
    }
    // The second report cut short after its address: the first is delivered.
    var cut = EventBytes.legacy([good, good])
    cut.removeLast(1 + 1 + 3)  // RSSI, data and Data_Length of the second report
    cut[1] = UInt8(cut.count - 2)
    do {
      _ = try HCIEvent.parse(cut)
      Issue.record("a cut event parsed")
    } catch {
      #expect(error.kind == .truncatedParameters)
      #expect(error.deliveredReports.map(\.data) == [[0x02, 0x01, 0x06]])
    }
    // Trailing bytes after the last report: the reports are delivered.
    var trailing = EventBytes.legacy([good])
    trailing += [0x00]
    trailing[1] += 1
    do {
      _ = try HCIEvent.parse(trailing)
      Issue.record("trailing bytes parsed")
    } catch {
      #expect(error.kind == .trailingBytes)
      #expect(error.deliveredReports.count == 1)
    }
  }
}
