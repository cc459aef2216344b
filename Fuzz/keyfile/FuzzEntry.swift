// libFuzzer entry for the daemon's configuration reader: the INI keyfile parser and
// DaemonConfiguration.parse on top of it, over any text. Linked by Fuzz/run.sh against the
// BeaconCore and GZone modules and a BridgeDaemon module of its configuration files.
@testable import BridgeDaemon

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzKeyFile(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
  if let keyFile = try? KeyFile.parse(text, file: "fuzz.conf") {
    for entry in keyFile.entries { precondition(entry.line >= 1, "an entry without a line") }
  }
  do {
    _ = try DaemonConfiguration.parse(text, file: "fuzz.conf")
  } catch {
    precondition(error.line >= 0 && error.file == "fuzz.conf", "an error without its place")
    _ = error.description
  }
  return 0
}
