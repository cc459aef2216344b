import BeaconCore
import BeaconTestSupport
import HCIParsing
import Testing

@testable import HCI

@Suite struct ScanSessionTests {
  static let legacyParameters: [UInt8] = [0x01, 0x0B, 0x20, 0x07, 0x00, 0x60, 0x00, 0x30, 0x00, 0x00, 0x00]

  @Test func legacyControllerGetsLegacyCommandsAndIsRestored() throws {
    let controller = ScriptedController()
    let session = ScanSession(transport: controller, configuration: HCIScanConfiguration())
    try session.start()
    #expect(!session.usesExtendedCommands)
    #expect(session.enabledScanning)
    #expect(
      controller.sent == [
        [0x01, 0x02, 0x10, 0x00],
        Self.legacyParameters,
        [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00],  // enable, duplicate filtering off
      ])
    session.stop()
    #expect(controller.sent.last == [0x01, 0x0C, 0x20, 0x02, 0x00, 0x00])
    session.stop()  // once only
    #expect(controller.sent.count == 4)
  }

  @Test func bluetooth5ControllerGetsExtendedCommands() throws {
    let controller = ScriptedController(extendedScanning: true)
    var configuration = HCIScanConfiguration()
    configuration.parameters = ScanParameters(active: true, interval: 0x0010, window: 0x0010)
    let session = ScanSession(transport: controller, configuration: configuration)
    try session.start()
    #expect(session.usesExtendedCommands)
    #expect(controller.sentOpcodes == [0x1002, 0x2041, 0x2042])
    #expect(controller.sent[1] == [0x01, 0x41, 0x20, 0x08, 0x00, 0x00, 0x01, 0x01, 0x10, 0x00, 0x10, 0x00])
    #expect(controller.sent[2] == [0x01, 0x42, 0x20, 0x06, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00])
    session.stop()
    #expect(controller.sent.last == [0x01, 0x42, 0x20, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])
  }

  @Test func forcedLegacySkipsTheCapabilityQuery() throws {
    let controller = ScriptedController(extendedScanning: true)
    let session = ScanSession(transport: controller, configuration: HCIScanConfiguration(commandSet: .legacy))
    try session.start()
    #expect(controller.sentOpcodes == [0x200B, 0x200C])
  }

  @Test func bluetoothdDiscoveringMeansBusy() {
    let controller = ScriptedController()
    controller.answer(0x200B, status: 0x0C)
    let session = ScanSession(transport: controller, configuration: HCIScanConfiguration())
    do {
      try session.start()
      Issue.record("started on a busy controller")
    } catch {
      #expect(error.kind == .adapterBusy)
      #expect(error.description.contains("Command Disallowed (0x0C)"))
      #expect(error.description.contains("bluetoothd"))
    }
    session.stop()
    // Nothing enabled, nothing disabled: bluetoothd's scan is left alone.
    #expect(controller.sentOpcodes == [0x1002, 0x200B])
  }

  @Test func joiningARunningScanLeavesItAlone() throws {
    let controller = ScriptedController()
    controller.answer(0x200B, status: 0x0C)
    let session = ScanSession(
      transport: controller, configuration: HCIScanConfiguration(joinRunningScan: true))
    try session.start()
    #expect(!session.enabledScanning)
    session.stop()
    #expect(controller.sentOpcodes == [0x1002, 0x200B])
  }

  @Test func otherStatusesAndSilence() {
    let controller = ScriptedController()
    controller.answer(0x200C, status: 0x12)
    #expect(throws: HCIScanError.self) {
      try ScanSession(transport: controller, configuration: HCIScanConfiguration()).start()
    }
    let quiet = ScriptedController()
    quiet.ignore(0x1002)
    do {
      try ScanSession(transport: quiet, configuration: HCIScanConfiguration(commandTimeoutMilliseconds: 300))
        .start()
    } catch { #expect(error.kind == .timeout) }
  }

  @Test func invalidParametersAreRefusedBeforeSending() {
    let controller = ScriptedController()
    var configuration = HCIScanConfiguration()
    configuration.parameters.window = 0x100
    #expect(throws: HCIScanError.self) {
      try ScanSession(transport: controller, configuration: configuration).start()
    }
    #expect(controller.sent.isEmpty)
  }

  @Test func reportsArrivingDuringSetupAreKept() throws {
    let controller = ScriptedController()
    let report = ReportDecoderTests.iBeaconEvent(minor: 7)
    controller.deliver(report, before: 0x200C)
    let session = ScanSession(transport: controller, configuration: HCIScanConfiguration())
    try session.start()
    #expect(session.drainPending() == [report])
    #expect(session.drainPending().isEmpty)
  }

  @Test(arguments: [
    (Int32(1), HCIScanError.Kind.permissionDenied),
    (13, .permissionDenied),
    (19, .adapterNotFound),
    (100, .adapterDown),
    (16, .adapterBusy),
    (97, .bluetoothUnavailable),
    (110, .timeout),
    (5, .system),
  ])
  func errnoMapping(code: Int32, kind: HCIScanError.Kind) {
    let error = HCIScanError.from(errno: code, operation: "bind", adapter: "hci0", message: "m")
    #expect(error.kind == kind)
    if kind == .permissionDenied { #expect(error.description.contains("CAP_NET_RAW")) }
    if kind == .adapterDown { #expect(error.description.contains("power on")) }
  }

  @Test func theSourceStreamsSightingsAndRestoresOnCancel() async throws {
    let controller = ScriptedController()
    controller.queue(ReportDecoderTests.iBeaconEvent(minor: 7))
    let source = HCIAdvertisementSource(
      configuration: HCIScanConfiguration(batchMilliseconds: 0),
      open: { _ throws(HCIScanError) in controller })
    #expect(source.description.contains("hci0"))
    let disable: [UInt8] = [0x01, 0x0C, 0x20, 0x02, 0x00, 0x00]
    do {
      var iterator = try await source.eventStream().makeAsyncIterator()
      let first = try await iterator.next()
      guard case .sighting(let ad) = first else {
        Issue.record("expected a sighting, got \(String(describing: first))")
        return
      }
      #expect(ad.address.description == "C0:FF:EE:00:00:07")
      #expect(ad.rssi == -61)
      #expect(ad.manufacturerData.first?.companyID == 0x004C)
      #expect(!controller.sent.contains(disable))
    }
    // The stream is gone: its thread turns scanning off again.
    try await waitUntil("LE Set Scan Enable (off) sent") { controller.sent.contains(disable) }
  }

  @Test func aFailedOpenEndsTheStreamWithTheError() async throws {
    let source = HCIAdvertisementSource(
      configuration: HCIScanConfiguration(),
      open: { _ throws(HCIScanError) in throw HCIScanError(.permissionDenied, "no CAP_NET_RAW") })
    await #expect(throws: HCIScanError.self) {
      for try await _ in try await source.eventStream() {}
    }
  }
}
