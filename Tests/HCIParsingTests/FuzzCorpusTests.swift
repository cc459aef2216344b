import Foundation
import HCIParsing
import Testing

/// The fuzz seeds, and every crasher the fuzzers ever found (kept in Fuzz/<target>/corpus),
/// replayed through the parsers: each must decode or fail with a typed error.
@Suite struct FuzzCorpusTests {
  static let fuzz = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fuzz")

  static func inputs(_ target: String) throws -> [(String, [UInt8])] {
    let folder = fuzz.appendingPathComponent(target).appendingPathComponent("corpus")
    return try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted().map { name in
      (name, [UInt8](try Data(contentsOf: folder.appendingPathComponent(name))))
    }
  }

  @Test func hciEventCorpus() throws {
    let inputs = try Self.inputs("hci-events")
    #expect(inputs.count >= 8)
    var assembler = ExtendedReportAssembler()
    var decoded = 0
    for (_, bytes) in inputs {
      guard let event = try? HCIEvent.parse(bytes) else { continue }
      decoded += 1
      if case .extendedAdvertisingReports(let reports) = event { for r in reports { _ = assembler.add(r) } }
    }
    #expect(decoded == inputs.count, "every seed is a valid event")
  }

  @Test func btsnoopCorpus() throws {
    let inputs = try Self.inputs("btsnoop")
    #expect(inputs.count >= 3)
    for (name, bytes) in inputs {
      let capture = try BTSnoopCapture(bytes: bytes)
      let reports = CaptureReports(capture: capture)
      if name == "monitor" {
        #expect(reports.controller == 1)
        // Three legacy reports, and two extended advertisements reassembled from two fragments each.
        #expect(reports.reports.count == 5)
      }
    }
  }
}
