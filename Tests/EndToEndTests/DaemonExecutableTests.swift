import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `beaconbridge run` replaces itself with `beaconbridged`, the daemon's own executable
/// (docs/PERFORMANCE.md): found next to the CLI, or in ../lib/beaconbridge as installed, in the
/// same process (systemd's main PID); a clear error when it is missing.
@Suite(.tags(.process), .timeLimit(.minutes(2)))
struct DaemonExecutableTests {
  static var buildFolder: String { (ScanCommandTests.binary as NSString).deletingLastPathComponent }

  /// Copies the built CLI (and the daemon when `daemonAt` is given, relative to `root`).
  func layout(_ name: String, cliAt cli: String, daemonAt daemon: String?) throws -> String {
    let root = try scratchDirectory(name)
    let files = FileManager.default
    for (from, to) in [("beaconbridge", cli), ("beaconbridged", daemon)] {
      guard let to else { continue }
      let target = root + "/" + to
      try files.createDirectory(
        atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
      try files.copyItem(atPath: Self.buildFolder + "/" + from, toPath: target)
    }
    return root
  }

  func run(_ binary: String, _ arguments: [String], bus: String? = nil, log: String? = nil) throws -> Process
  {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: binary)
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment.removeValue(forKey: "NOTIFY_SOCKET")
    environment.removeValue(forKey: "JOURNAL_STREAM")
    if let bus { environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus }
    process.environment = environment
    process.standardOutput = FileHandle.nullDevice
    if let log {
      _ = FileManager.default.createFile(atPath: log, contents: nil)
      process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
    }
    try process.run()
    return process
  }

  @Test func missingDaemonExecutableIsAClearError() async throws {
    let scratch = try layout("no-daemon", cliAt: "bin/beaconbridge", daemonAt: nil)
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let root = URL(fileURLWithPath: scratch).resolvingSymlinksInPath().path
    let err = Pipe()
    let process = Process()
    process.executableURL = URL(fileURLWithPath: root + "/bin/beaconbridge")
    process.arguments = ["run", "--state-dir", root + "/state"]
    process.standardError = err
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    #expect(await waitForExit(process))
    let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(process.terminationStatus == 1)
    #expect(
      message.hasPrefix(
        "beaconbridge: the daemon's executable beaconbridged is missing (looked for \(root)/bin/beaconbridged and \(root)/bin/../lib/beaconbridge/beaconbridged)"
      ),
      "\(message)")
    #expect(message.split(separator: "\n").count == 1, "\(message)")
  }

  @Test func installedLayoutRunsTheDaemonInTheSameProcess() async throws {
    let scratch = try layout(
      "installed", cliAt: "usr/bin/beaconbridge", daemonAt: "usr/lib/beaconbridge/beaconbridged")
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let root = URL(fileURLWithPath: scratch).resolvingSymlinksInPath().path
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let config = root + "/beaconbridge.conf"
    try "".write(toFile: config, atomically: true, encoding: .utf8)
    let process = try run(
      root + "/usr/bin/beaconbridge", ["run", "--config", config, "--state-dir", root + "/state"],
      bus: bus.address, log: root + "/daemon.log")
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    // The PID Process started now runs the daemon's executable: exec, not a child.
    let exe = "/proc/\(process.processIdentifier)/exe"
    let daemon = root + "/usr/lib/beaconbridge/beaconbridged"
    try await waitUntil(
      "\(exe) is \((try? FileManager.default.destinationOfSymbolicLink(atPath: exe)) ?? "gone")"
    ) { (try? FileManager.default.destinationOfSymbolicLink(atPath: exe)) == daemon }
    // And it is the daemon: it opens its store, serves its API, and on SIGTERM exits 0 (sent once
    // its handler is in place: SigCgt in /proc/PID/status; it is set before READY=1).
    let log: @Sendable () -> String = {
      (try? String(contentsOfFile: root + "/daemon.log", encoding: .utf8)) ?? ""
    }
    try await waitUntil("\(log())") { log().contains("ready: serving org.beaconbridge") }
    #expect(FileManager.default.fileExists(atPath: root + "/state/beaconbridge.sqlite"))
    try await waitUntil("the condition at this line") { catches(SIGTERM, pid: process.processIdentifier) }
    kill(process.processIdentifier, SIGTERM)
    #expect(await waitForExit(process))
    #expect(process.terminationReason == .exit && process.terminationStatus == 0)
  }

  /// An upload URL libcurl cannot use, in the installed layout: the daemon refuses to start at
  /// the URL's `file:line`, and `doctor` (the CLI, which finds the URL checker in
  /// /usr/lib/beaconbridge) says critical at the same place.
  @Test func anUnusableUploadURLStopsTheDaemonAndIsCriticalInDoctor() async throws {
    let scratch = try layout(
      "bad-url", cliAt: "usr/bin/beaconbridge", daemonAt: "usr/lib/beaconbridge/beaconbridged")
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let root = URL(fileURLWithPath: scratch).resolvingSymlinksInPath().path
    let config = root + "/beaconbridge.conf"
    try "[Upload]\nURL = https://backend.example:99999/trips\n".write(
      toFile: config, atomically: true, encoding: .utf8)
    let state = root + "/state"
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
    let place = "\(config):2: URL is refused by libcurl's URL parser"
    let process = try run(
      root + "/usr/bin/beaconbridge", ["run", "--config", config, "--state-dir", state],
      bus: "unix:path=/nonexistent/bus", log: root + "/daemon.log")
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    #expect(await waitForExit(process))
    let log = (try? String(contentsOfFile: root + "/daemon.log", encoding: .utf8)) ?? ""
    #expect(process.terminationStatus == 1)
    #expect(log.contains(place) && log.contains("not starting"), "\(log)")
    let doctor = try await runProcess(
      root + "/usr/bin/beaconbridge", ["doctor", "--json", "--config", config, "--state-dir", state],
      environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
    #expect(doctor.status == 1, "\(doctor.stderr)")
    let checks = (try? JSONValue.parse(Data(doctor.stdout.utf8)))?["checks"]?.arrayValue ?? []
    let configuration = checks.first { $0["name"]?.stringValue == "configuration" }
    #expect(configuration?["status"]?.stringValue == "critical", "\(doctor.stdout)")
    #expect(configuration?["detail"]?.stringValue?.contains(place) == true, "\(doctor.stdout)")
  }

  /// Whether process `pid` has a handler for `signal` (SigCgt in /proc/PID/status).
  func catches(_ signal: Int32, pid: Int32) -> Bool {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
      let mask = UInt64(line.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16)
    else { return false }
    return mask >> (signal - 1) & 1 == 1
  }

  /// A package upgrade replaces the executable under a running daemon (dpkg renames the new file
  /// over the old). Until systemd restarts it, its HTTP children are still its own version: they
  /// are spawned from /proc/self/exe, not from the path, so uploads go on.
  @Test func uploadsGoOnAfterTheExecutableIsReplacedUnderTheDaemon() async throws {
    let scratch = try layout(
      "upgrade", cliAt: "usr/bin/beaconbridge", daemonAt: "usr/lib/beaconbridge/beaconbridged")
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let root = URL(fileURLWithPath: scratch).resolvingSymlinksInPath().path
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let backend = try await FakeBackend()
    let state = root + "/state"
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
    let config = try fallbackConfiguration(in: root, upload: "URL = \(backend.url.absoluteString)")
    let process = try run(
      root + "/usr/bin/beaconbridge", ["run", "--config", config, "--state-dir", state], bus: bus.address,
      log: root + "/daemon.log")
    defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    let cli = DaemonEndToEndTests()
    try await waitUntil("the condition at this line", timeout: .seconds(20)) {
      (try? await cli.cli(["status"], bus: bus.address, dir: state).status) == 0
    }
    // The new version: not a daemon at all, so a child spawned from the path would fail.
    let daemon = root + "/usr/lib/beaconbridge/beaconbridged"
    try "#!/bin/sh\nexit 3\n".write(toFile: daemon + ".dpkg-new", atomically: false, encoding: .utf8)
    #expect(chmod(daemon + ".dpkg-new", 0o755) == 0)
    #expect(rename(daemon + ".dpkg-new", daemon) == 0)
    #expect(
      try await cli.cli(["trip", "start", "--trip-id", "u1"], bus: bus.address, dir: state).status == 0)
    let sent = try await cli.cli(
      ["trip", "events", "--trip-id", "u1", "-"], bus: bus.address, dir: state, stdin: #"[{"type":"a"}]"#)
    #expect(sent.status == 0, "\(sent.stderr)")
    try await waitUntil(
      "\((try? String(contentsOfFile: root + "/daemon.log", encoding: .utf8)) ?? "")", timeout: .seconds(20)
    ) {
      backend.received().contains { $0.status == "200" && $0.key == "u1#0" }
    }
    kill(process.processIdentifier, SIGTERM)
    #expect(await waitForExit(process))
  }

  @Test func theDaemonExecutableAnswersHelpAndPointsAtRun() async throws {
    let help = try await runProcess(Self.buildFolder + "/beaconbridged", ["--help"])
    #expect(help.status == 0)
    #expect(help.stdout.hasPrefix("usage: beaconbridged [--config PATH] [--state-dir DIR]"), "\(help.stdout)")
    #expect(help.stdout.contains("beaconbridge run --help"))
    #expect(help.stderr.isEmpty)
  }

  @Test(arguments: [
    (["--verbose"], "beaconbridged: unexpected argument '--verbose'; usage: beaconbridged"),
    (["--config"], "beaconbridged: --config needs a value; usage: beaconbridged"),
    (["--state-dir", ""], "beaconbridged: --state-dir needs a value; usage: beaconbridged"),
  ])
  func theDaemonExecutableRefusesWhatRunDoesNotPass(arguments: [String], message: String) async throws {
    let refused = try await runProcess(Self.buildFolder + "/beaconbridged", arguments)
    #expect(refused.status == 64)
    #expect(refused.stderr.hasPrefix(message), "\(refused.stderr)")
    #expect(refused.stderr.split(separator: "\n").count == 1)
  }
}
