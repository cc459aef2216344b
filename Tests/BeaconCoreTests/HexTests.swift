import BeaconCore
import Testing

@Suite struct HexTests {
  @Test(arguments: [
    ("0201061AFF4C00", [0x02, 0x01, 0x06, 0x1A, 0xFF, 0x4C, 0x00] as [UInt8]),
    ("de:ad-BE ef", [0xDE, 0xAD, 0xBE, 0xEF]),
    ("", []),
  ])
  func decodes(text: String, bytes: [UInt8]) {
    #expect(Hex.decode(text) == bytes)
  }

  @Test(arguments: ["abc", "zz", "0x12", "1 2"])
  func rejectsMalformed(text: String) {
    #expect(Hex.decode(text) == nil)
  }
}
