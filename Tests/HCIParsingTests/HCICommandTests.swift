import HCIParsing
import Testing

/// Command encodings, byte for byte against the Core Specification, Vol 4, Part E, 7.8.
@Suite struct HCICommandTests {
  @Test func legacyScanParameters() {
    let p = ScanParameters(active: true, interval: 0x0060, window: 0x0030)
    #expect(
      HCICommand.leSetScanParameters(p).packet == [
        0x01, 0x0B, 0x20, 0x07, 0x01, 0x60, 0x00, 0x30, 0x00, 0x00, 0x00,
      ])
  }

  @Test func legacyScanEnable() {
    #expect(
      HCICommand.leSetScanEnable(true, filterDuplicates: false).packet == [
        0x01, 0x0C, 0x20, 0x02, 0x01, 0x00,
      ])
    #expect(
      HCICommand.leSetScanEnable(false, filterDuplicates: false).packet == [
        0x01, 0x0C, 0x20, 0x02, 0x00, 0x00,
      ])
  }

  @Test func extendedScanParameters() {
    let p = ScanParameters(active: false, interval: 0x0100, window: 0x0080)
    #expect(
      HCICommand.leSetExtendedScanParameters(p).packet
        == [0x01, 0x41, 0x20, 0x08, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x80, 0x00])
    var coded = p
    coded.codedPHY = true
    #expect(
      HCICommand.leSetExtendedScanParameters(coded).packet
        == [
          0x01, 0x41, 0x20, 0x0D, 0x00, 0x00, 0x05, 0x00, 0x00, 0x01, 0x80, 0x00, 0x00, 0x00, 0x01, 0x80,
          0x00,
        ])
  }

  @Test func extendedScanEnable() {
    #expect(
      HCICommand.leSetExtendedScanEnable(true, filterDuplicates: false).packet
        == [0x01, 0x42, 0x20, 0x06, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00])
  }

  @Test func readCommands() {
    #expect(HCICommand.readLocalSupportedCommands.packet == [0x01, 0x02, 0x10, 0x00])
    #expect(HCICommand.leReadLocalSupportedFeatures.packet == [0x01, 0x03, 0x20, 0x00])
  }

  @Test func supportedCommandsSelectExtendedScanning() throws {
    var octets = [UInt8](repeating: 0, count: 64)
    #expect(try !SupportedCommands(returnParameters: [0] + octets).extendedScanning)
    octets[37] = 0x20
    #expect(try !SupportedCommands(returnParameters: [0] + octets).extendedScanning)
    octets[37] = 0x60
    #expect(try SupportedCommands(returnParameters: [0] + octets).extendedScanning)
    #expect(throws: HCIEventError.self) { try SupportedCommands(returnParameters: [0, 1, 2]) }
  }

  @Test func scanParametersFromMilliseconds() {
    #expect(
      ScanParameters(active: false, intervalMilliseconds: 60, windowMilliseconds: 30)?.interval == 0x0060)
    #expect(ScanParameters(active: false, intervalMilliseconds: 30, windowMilliseconds: 60) == nil)
    #expect(ScanParameters(active: false, intervalMilliseconds: 1, windowMilliseconds: 1) == nil)
    #expect(ScanParameters(active: false, intervalMilliseconds: 20_000, windowMilliseconds: 10) == nil)
    #expect(ScanParameters(interval: 0x10, window: 0x20).problems.count == 1)
  }
}
