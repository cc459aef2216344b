import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Waits for a process to exit, at most `seconds`; SIGKILLs it after that and returns false.
/// (Foundation's `waitUntilExit` would spin forever on a process that hangs.)
@discardableResult
func waitForExit(_ process: Process, seconds: Double = 30) async -> Bool {
  let deadline = ContinuousClock.now.advanced(by: .seconds(seconds))
  while process.isRunning, ContinuousClock.now < deadline {
    try? await Task.sleep(for: .milliseconds(20))
  }
  if process.isRunning {
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    return false
  }
  process.waitUntilExit()
  return true
}

/// Starts `beaconbridge run` on a bus, with its log discarded and no NOTIFY_SOCKET.
func launchDaemon(config: String, stateDirectory: String, bus: String) throws -> Process {
  let daemon = Process()
  daemon.executableURL = URL(fileURLWithPath: ScanCommandTests.binary)
  daemon.arguments = ["run", "--config", config, "--state-dir", stateDirectory]
  var environment = ProcessInfo.processInfo.environment
  environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
  environment.removeValue(forKey: "NOTIFY_SOCKET")
  daemon.environment = environment
  daemon.standardError = FileHandle.nullDevice
  try daemon.run()
  return daemon
}

/// Writes `beaconbridge.conf` in `dir` for a daemon with no beacon: trips take the fallback
/// device ID DEPOT-7 at once, and batches go to the `[Upload]` section's `upload` lines.
func fallbackConfiguration(in dir: String, upload: String) throws -> String {
  let path = dir + "/beaconbridge.conf"
  try """
  [Trips]
  unresolvedPolicy = fallback
  fallbackDeviceId = DEPOT-7
  lateWindow = 0
  [Upload]
  \(upload)
  """.write(toFile: path, atomically: true, encoding: .utf8)
  return path
}
