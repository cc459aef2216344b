// libFuzzer entry for the btsnoop reader, and everything a replay does with a capture:
// packets per datalink, event parsing, controller choice, fragment reassembly.
// Linked against the HCIParsing module by Fuzz/run.sh.
@testable import HCIParsing

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBTSnoop(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
  guard let capture = try? BTSnoopCapture(bytes: bytes) else { return 0 }
  // What was read writes back to the same records.
  let again = try? BTSnoopCapture(bytes: capture.bytes)
  precondition(again?.records == capture.records, "btsnoop round trip changed the records")
  let reports = CaptureReports(capture: capture)
  for timed in reports.reports {
    precondition(timed.report.data.count <= ExtendedReportAssembler.maximumLength)
    _ = reports.seconds(timed.timestamp)
  }
  if let first = reports.scanningControllers.first {
    _ = CaptureReports(capture: capture, controller: first &+ 1)
  }
  return 0
}
