// libFuzzer entry for the HCI event parser and the extended-report assembler.
// Linked against the HCIParsing module by Fuzz/run.sh (swiftlang
// docs/libFuzzerIntegration.md: swiftc -sanitize=fuzzer,address -parse-as-library).
@testable import HCIParsing

/// One assembler across inputs, so fragment streams from many inputs meet, as on a live socket.
nonisolated(unsafe) var assembler = ExtendedReportAssembler()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHCIEvent(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
  guard let event = try? HCIEvent.parse(bytes) else { return 0 }
  switch event {
  case .advertisingReports(let reports):
    for report in reports {
      precondition(report.data.count <= 31, "legacy report with more than 31 bytes")
      precondition(report.address.bytes.count == 6)
      _ = assembler.add(report)
    }
  case .extendedAdvertisingReports(let reports):
    for report in reports {
      precondition(report.data.count <= 229, "extended report with more than 229 bytes")
      if let whole = assembler.add(report) {
        precondition(whole.data.count <= ExtendedReportAssembler.maximumLength)
      }
    }
    precondition(assembler.pendingCount <= ExtendedReportAssembler.maximumPending)
  case .commandComplete(_, let parameters):
    _ = try? SupportedCommands(returnParameters: parameters).extendedScanning
  default:
    break
  }
  return 0
}
