import DBus
import Foundation

/// A python-dbusmock process (`/usr/bin/python3 -m dbusmock`) on a private bus.
///
/// Debian's python3-dbusmock installs for `/usr/bin/python3`; the `python3` first on PATH may be
/// another interpreter, so the path is explicit.
public final class MockService: Sendable {
  private let process: Process
  public let name: BusName
  /// The mock's standard error, for failure messages.
  public let logFile: URL

  public static let python = "/usr/bin/python3"

  /// Fails (never skips) if python3-dbusmock is missing.
  public static func requireDBusMock() throws {
    try PrivateBus.require(python, package: "python3")
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: python)
    probe.arguments = ["-c", "import dbusmock"]
    probe.standardError = FileHandle.nullDevice
    try probe.run()
    probe.waitUntilExit()
    guard probe.terminationStatus == 0 else {
      throw PrivateBus.ToolMissing(tool: "python3 module dbusmock", package: "python3-dbusmock")
    }
  }

  /// A plain mock object: `dbusmock --session NAME PATH INTERFACE`.
  public static func start(
    busAddress: String, name: BusName, path: ObjectPath, interface: InterfaceName
  ) async throws -> MockService {
    try await start(
      arguments: ["--session", name.rawValue, path.rawValue, interface.rawValue],
      environment: ["DBUS_SESSION_BUS_ADDRESS": busAddress], busAddress: busAddress, name: name)
  }

  /// A template on the "system" bus: `dbusmock --system --template TEMPLATE`, with
  /// `DBUS_SYSTEM_BUS_ADDRESS` pointing at the private bus.
  public static func start(busAddress: String, template: String, name: BusName) async throws -> MockService {
    try await start(
      arguments: ["--system", "--template", template],
      environment: ["DBUS_SYSTEM_BUS_ADDRESS": busAddress], busAddress: busAddress, name: name)
  }

  private static func start(
    arguments: [String], environment: [String: String], busAddress: String, name: BusName
  ) async throws -> MockService {
    try requireDBusMock()
    let process = Process()
    process.executableURL = URL(fileURLWithPath: python)
    process.arguments = ["-m", "dbusmock"] + arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let logFile = FileManager.default.temporaryDirectory.appendingPathComponent(
      "dbusmock-\(UUID().uuidString.prefix(8)).log")
    _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
    let log = try FileHandle(forWritingTo: logFile)
    process.standardError = log
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let service = MockService(process: process, name: name, logFile: logFile)
    // Ready once the name has an owner.
    let watcher = try Connection(.address(busAddress))
    defer { watcher.close() }
    // Generous: python3 and dbusmock start slowly on a loaded two-core machine. DBusTestSupport
    // does not depend on BeaconTestSupport's `waitUntil`, so this is its own loop; like
    // `waitUntil` it throws when it runs out, and the test stops there.
    let timeout: Duration = .seconds(45)
    let deadline = ContinuousClock.now + timeout
    func failure(_ reason: String) -> DBusError {
      service.stop()
      let log = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
      return DBusError(.serviceUnknown, "dbusmock \(reason): \(log)")
    }
    while true {
      if (try? await watcher.nameOwner(of: name)) != nil { return service }
      guard process.isRunning else { throw failure("exited before it took \(name)") }
      guard ContinuousClock.now < deadline else { throw failure("did not take \(name) within \(timeout)") }
      try await Task.sleep(for: .milliseconds(50))
    }
  }

  private init(process: Process, name: BusName, logFile: URL) {
    self.process = process
    self.name = name
    self.logFile = logFile
  }

  public var isRunning: Bool { process.isRunning }

  /// Kills the mock (SIGKILL, as a crash would) and waits for it: its bus name is released.
  public func stop() {
    PrivateBus.kill(process)
  }

  /// What the mock wrote to standard error.
  public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

  deinit {
    stop()
    try? FileManager.default.removeItem(at: logFile)
  }
}
