import BeaconTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Waits for a process to exit, at most `seconds` (`waitUntil`: a timeout fails the test at the
/// caller's line); SIGKILLs it after that and returns false.
/// (Foundation's `waitUntilExit` would spin forever on a process that hangs.)
@discardableResult
func waitForExit(
  _ process: Process, seconds: Double = 30, sourceLocation: SourceLocation = #_sourceLocation
) async -> Bool {
  do {
    try await waitUntil(
      "process \(process.processIdentifier) to exit", timeout: .seconds(seconds), poll: .milliseconds(20),
      sourceLocation: sourceLocation
    ) { !process.isRunning }
  } catch {
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    return false
  }
  process.waitUntilExit()
  return true
}

/// Starts `beaconbridge run` on a bus, outside systemd (no NOTIFY_SOCKET, no JOURNAL_STREAM)
/// unless `environment` says otherwise; its stderr goes to the file `log`, or nowhere.
func launchDaemon(
  config: String, stateDirectory: String, bus: String, environment overrides: [String: String] = [:],
  log: String? = nil
) throws -> Process {
  let daemon = Process()
  daemon.executableURL = URL(fileURLWithPath: ScanCommandTests.binary)
  daemon.arguments = ["run", "--config", config, "--state-dir", stateDirectory]
  var environment = ProcessInfo.processInfo.environment
  environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
  environment.removeValue(forKey: "NOTIFY_SOCKET")
  environment.removeValue(forKey: "JOURNAL_STREAM")
  environment.merge(overrides) { $1 }
  daemon.environment = environment
  if let log {
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    daemon.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
  } else {
    daemon.standardError = FileHandle.nullDevice
  }
  try daemon.run()
  return daemon
}

/// Writes `beaconbridge.conf` in `dir` for a daemon with no beacon: trips take the fallback
/// device ID DEPOT-7 at once, and batches go to the `[Upload]` section's `upload` lines; `extra`
/// follows them (more sections).
func fallbackConfiguration(in dir: String, upload: String, extra: String = "") throws -> String {
  let path = dir + "/beaconbridge.conf"
  try """
  [Trips]
  unresolvedPolicy = fallback
  fallbackDeviceId = DEPOT-7
  lateWindow = 0
  [Upload]
  \(upload)
  \(extra)
  """.write(toFile: path, atomically: true, encoding: .utf8)
  return path
}
