import DBus
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A private `dbus-daemon` on a Unix socket in a temporary directory, for tests.
///
/// A missing tool is a failure, never a skip: `start()` throws `ToolMissing`, naming the Debian
/// package that provides it.
public final class PrivateBus: Sendable {
  public let address: String
  public let directory: URL
  private let process: Process

  /// A tool a test needs is not installed.
  public struct ToolMissing: Error, CustomStringConvertible {
    public var tool: String
    public var package: String
    public var description: String {
      "\(tool) is not installed: run `apt-get install -y \(package)` (see scripts/test-deps.txt)"
    }
  }

  /// A session-like bus that lets anyone own any name and send anything.
  static func configuration(socket: String, maxOutgoingBytes: Int?) -> String {
    // dbus-daemon refuses to queue more than `max_outgoing_bytes` for one connection: a signal
    // that does not fit is dropped for it (bus.c, "destination has a full message queue").
    let limit = maxOutgoingBytes.map { "<limit name=\"max_outgoing_bytes\">\($0)</limit>" } ?? ""
    return """
      <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
       "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
      <busconfig>
        <type>session</type>
        <listen>unix:path=\(socket)</listen>
        <auth>EXTERNAL</auth>
        \(limit)
        <policy context="default">
          <allow send_destination="*" eavesdrop="true"/>
          <allow eavesdrop="true"/>
          <allow own="*"/>
          <allow user="*"/>
        </policy>
      </busconfig>
      """
  }

  /// Fails with `ToolMissing` if `path` is not an executable.
  public static func require(_ path: String, package: String) throws {
    guard FileManager.default.isExecutableFile(atPath: path) else {
      throw ToolMissing(tool: path, package: package)
    }
  }

  /// Starts `dbus-daemon --nofork --print-address` and waits for its address. With
  /// `maxOutgoingBytes`, the bus queues at most that many bytes for a connection that does not
  /// read (beyond what its socket holds) and drops the signals past it, as a bus under load does.
  public static func start(maxOutgoingBytes: Int? = nil) throws -> PrivateBus {
    try require("/usr/bin/dbus-daemon", package: "dbus-daemon")
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "beaconbridge-bus-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let config = directory.appendingPathComponent("bus.conf")
    try configuration(
      socket: directory.appendingPathComponent("bus").path, maxOutgoingBytes: maxOutgoingBytes
    ).write(
      to: config, atomically: true, encoding: .utf8)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
    process.arguments = ["--config-file=\(config.path)", "--nofork", "--print-address=1"]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice  // "Failed to set fd limit" as non-root-ish noise
    try process.run()
    // The daemon prints its address once it listens.
    var line = Data()
    let handle = output.fileHandleForReading
    while !line.contains(UInt8(ascii: "\n")) {
      let chunk = handle.availableData
      if chunk.isEmpty { break }
      line.append(chunk)
    }
    let address = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    guard !address.isEmpty else {
      process.terminate()
      throw DBusError(.noServer, "dbus-daemon printed no address")
    }
    return PrivateBus(address: address, directory: directory, process: process)
  }

  private init(address: String, directory: URL, process: Process) {
    self.address = address
    self.directory = directory
    self.process = process
  }

  public var busAddress: BusAddress { .address(address) }

  /// Freezes the bus daemon (SIGSTOP): a client's connection and calls wait, as on a bus that is
  /// overloaded, until `thaw`.
  public func freeze() { _ = Foundation.kill(process.processIdentifier, SIGSTOP) }

  /// Lets a frozen bus daemon run again (SIGCONT).
  public func thaw() { _ = Foundation.kill(process.processIdentifier, SIGCONT) }

  /// Stops the daemon and removes its directory.
  public func stop() {
    thaw()
    Self.kill(process)
    try? FileManager.default.removeItem(at: directory)
  }

  deinit { stop() }

  /// SIGKILL, then waits (bounded) until Foundation has reaped the child.
  ///
  /// Not `terminate()` plus `waitUntilExit()`: children spawned from a Swift concurrency thread
  /// inherit a signal mask with SIGTERM blocked, so dbus-daemon never saw it, and
  /// `waitUntilExit()` then spun forever.
  static func kill(_ process: Process) {
    guard process.isRunning else { return }
    #if canImport(Glibc)
      _ = Glibc.kill(process.processIdentifier, SIGKILL)
    #endif
    let deadline = ContinuousClock.now + .seconds(5)
    while process.isRunning && ContinuousClock.now < deadline { usleep(5_000) }
  }
}
