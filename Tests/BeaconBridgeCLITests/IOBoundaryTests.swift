import BeaconBridgeCLI
import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The CLI's input and output boundaries, through the real binary as a process: what a careless
/// or hostile caller does to stdin, stdout and file arguments gives a plain error and exit 1
/// (or 64 for a usage error), never a trap, a hang, unbounded memory or a lying exit 0.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct IOBoundaryTests {
  static let root: URL = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url
  }()
  static let binary = root.appendingPathComponent(".build/debug/beaconbridge").path
  static let scenario = root.appendingPathComponent("Tests/Scenarios/no-beacon.json").path
  static let longScenario = root.appendingPathComponent("Tests/Scenarios/lossy-beacon.json").path

  enum Stdin {
    case closed
    case path(String)
    case bytes([UInt8])
  }

  enum Stdout {
    case capture
    case devFull
    case closedPipe
    case closed
  }

  struct Run {
    var status: Int32
    /// The signal that ended it, if one did.
    var signal: Int32?
    var stdout: String
    var stderr: String
    var seconds: Double
  }

  /// Spawns the binary with the given standard streams (posix_spawn file actions: Foundation's
  /// Process cannot close a descriptor) and waits at most `timeout` seconds. Past that it kills
  /// the binary, records the hang at the caller's line and throws: a hang is this suite's failure.
  /// The wait polls with `waitUntil`, which holds no thread between polls (`onOwnThread` says why
  /// that matters).
  static func run(
    _ arguments: [String], stdin: Stdin = .path("/dev/null"), stdout: Stdout = .capture, timeout: Double = 60,
    sourceLocation: SourceLocation = #_sourceLocation
  ) async throws -> Run {
    struct NotBuilt: Error, CustomStringConvertible {
      var description: String { "\(IOBoundaryTests.binary) is missing: run 'swift build' first" }
    }
    guard FileManager.default.isExecutableFile(atPath: binary) else { throw NotBuilt() }
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("bb-io-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let outPath = scratch.appendingPathComponent("stdout").path
    let errPath = scratch.appendingPathComponent("stderr").path

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    switch stdin {
    case .closed: posix_spawn_file_actions_addclose(&actions, 0)
    case .path(let path): posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
    case .bytes(let bytes):
      let path = scratch.appendingPathComponent("stdin").path
      try Data(bytes).write(to: URL(fileURLWithPath: path))
      posix_spawn_file_actions_addopen(&actions, 0, path, O_RDONLY, 0)
    }
    var pipeEnds: [Int32] = [-1, -1]
    switch stdout {
    case .capture: posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    case .devFull: posix_spawn_file_actions_addopen(&actions, 1, "/dev/full", O_WRONLY, 0)
    case .closed: posix_spawn_file_actions_addclose(&actions, 1)
    case .closedPipe:
      guard pipe(&pipeEnds) == 0 else { throw POSIXError(.EMFILE) }
      close(pipeEnds[0])
      posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
      posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
    }
    defer { if pipeEnds[1] >= 0 { close(pipeEnds[1]) } }
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

    var environment = ProcessInfo.processInfo.environment
    environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=" + scratch.appendingPathComponent("no-bus").path
    environment["BEACONBRIDGE_STATE_DIR"] = scratch.appendingPathComponent("state").path
    let argv = ([binary] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for p in argv + envp { free(p) } }

    let started = ContinuousClock.now
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, binary, &actions, nil, argv, envp)
    guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
    var status: Int32 = 0
    do {
      try await waitUntil(
        "beaconbridge \(arguments.joined(separator: " ")) to exit", timeout: .seconds(timeout),
        poll: .milliseconds(5), sourceLocation: sourceLocation
      ) { waitpid(pid, &status, WNOHANG) != 0 }
    } catch {
      kill(pid, SIGKILL)
      waitpid(pid, &status, 0)
      throw error
    }
    let elapsed = ContinuousClock.now - started
    let read = { (path: String) in
      (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }
    let signal = status & 0x7f
    return Run(
      status: signal == 0 ? (status >> 8) & 0xff : 128 + signal, signal: signal == 0 ? nil : signal,
      stdout: read(outPath), stderr: read(errPath),
      seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
  }

  /// A clean failure: exit `status` by itself (no signal), one error line naming `words`, and
  /// no trap or Foundation error text.
  static func expectClean(_ run: Run, status: Int32 = 1, saying words: String, _ what: String) {
    #expect(run.signal == nil, "\(what): killed by signal \(run.signal ?? 0); stderr: \(run.stderr)")
    #expect(run.status == status, "\(what): exit \(run.status); stderr: \(run.stderr)")
    #expect(run.stderr.contains(words), "\(what): stderr does not say \"\(words)\": \(run.stderr)")
    for bad in ["Fatal error", "NSCocoaErrorDomain", "Error Domain=", "You don't have permission"] {
      #expect(!run.stderr.contains(bad), "\(what): \(run.stderr)")
    }
  }

  // MARK: 1. No trap, hang or unbounded growth from input

  @Test(arguments: [
    (["simulate", "-"], "cannot read standard input: it is closed"),
    (["replay", "-"], "cannot read standard input: it is closed"),
    (["trip", "events", "--trip-id", "t1", "-"], "cannot read standard input: it is closed"),
  ])
  func closedStdin(arguments: [String], words: String) async throws {
    let run = try await Self.run(arguments, stdin: .closed)
    Self.expectClean(run, saying: words, arguments.joined(separator: " "))
  }

  @Test(arguments: [["simulate", "-"], ["replay", "-"], ["trip", "events", "--trip-id", "t1", "-"]])
  func directoryStdin(arguments: [String]) async throws {
    let run = try await Self.run(arguments, stdin: .path("/"))
    Self.expectClean(
      run, saying: "cannot read standard input: it is a directory", arguments.joined(separator: " "))
  }

  @Test(arguments: [
    (["simulate", "/"], "cannot read /: it is a directory"),
    (["replay", "/"], "cannot read /: it is a directory"),
    (["trip", "events", "--trip-id", "t1", "/"], "cannot read /: it is a directory"),
    (["simulate", "/nonexistent/scenario.json"], "cannot read /nonexistent/scenario.json: no such file"),
    (["replay", "/etc/hostname/x"], "a part of the path is not a directory"),
    (["gzone", "status", "/"], "no such file"),
    (["run", "--config", "/"], "configuration: /: cannot read it: it is a directory"),
    (
      ["run", "--config", "/dev/zero"],
      "configuration: /dev/zero: cannot read it: it is a character device, not a regular file"
    ),
    (["simulate", "/dev/zero"], "cannot read /dev/zero: it is a character device, not a regular file"),
  ])
  func badFiles(arguments: [String], words: String) async throws {
    let run = try await Self.run(arguments)
    Self.expectClean(run, saying: words, arguments.joined(separator: " "))
  }

  /// /dev/zero: replay refuses it after the 16-byte header, simulate after its 16 MiB cap; both
  /// at once, not after gigabytes.
  @Test func endlessInputIsCapped() async throws {
    let replay = try await Self.run(["replay", "-"], stdin: .path("/dev/zero"), timeout: 30)
    Self.expectClean(replay, saying: "not a btsnoop capture", "replay - < /dev/zero")
    // Refused after 16 bytes; it took 20 s to grow past 5 GB before. A loose bound for a busy
    // machine: the point is that it ends.
    #expect(replay.seconds < 30)
    let simulate = try await Self.run(["simulate", "-"], stdin: .path("/dev/zero"), timeout: 30)
    Self.expectClean(simulate, saying: "it is larger than the 16 MiB limit", "simulate - < /dev/zero")
    let events = try await Self.run(
      ["trip", "events", "--trip-id", "t1", "-"], stdin: .path("/dev/zero"), timeout: 30)
    Self.expectClean(events, saying: "it is larger than the 16 MiB limit", "trip events - < /dev/zero")
    // A btsnoop header, then zeros forever: the capture cap.
    var header = Array("btsnoop".utf8) + [0, 0, 0, 0, 1, 0, 0, 0x03, 0xEA]
    header += [UInt8](repeating: 0, count: 8)
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("bb-io-big-\(UUID().uuidString)")
    #expect(FileManager.default.createFile(atPath: path.path, contents: Data(header)))
    defer { try? FileManager.default.removeItem(at: path) }
    // A sparse file just past the cap: refused before it is read.
    let handle = try FileHandle(forWritingTo: path)
    try handle.truncate(atOffset: 32 << 20 + 1)
    try handle.close()
    let capture = try await Self.run(["replay", path.path], timeout: 30)
    Self.expectClean(capture, saying: "it is larger than the 32 MiB limit", "replay of a 32 MiB + 1 file")
  }

  /// Each command's --help states its cap, and the words match the constant.
  @Test func helpStatesTheCaps() {
    let json = InputReader.size(InputLimits.json)
    let capture = InputReader.size(InputLimits.capture)
    #expect(json == "16 MiB" && capture == "32 MiB")
    #expect(CLI.help(for: SimulateCommand.self).contains("at most \(json)"))
    #expect(CLI.help(for: TripCommand.self).contains("at most \(json)"))
    #expect(CLI.help(for: ReplayCommand.self).contains("larger than \(capture)"))
    // DirectoryGZoneSource.maximumFileSize, 16 MiB.
    #expect(CLI.help(for: GZoneCommand.self).contains("larger than 16 MiB"))
  }

  /// A FIFO given as a file is refused at once, whoever might write to it: a reader that waited
  /// for a writer would hang the command (and, on SIGHUP, the daemon). Standard input (`-`) is
  /// the way to stream.
  @Test(arguments: [
    ["simulate"], ["replay"], ["trip", "events", "--trip-id", "t1"], ["run", "--config"],
    ["doctor", "--json", "--config"],
  ])
  func aFIFOIsRefusedAtOnce(command: [String]) async throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent(
      "bb-io-fifo-\(UUID().uuidString)"
    ).path
    #expect(mkfifo(path, 0o600) == 0)
    defer { unlink(path) }
    let run = try await Self.run(command + [path], timeout: 30)
    #expect(run.signal == nil && run.status != 0, "\(command): status \(run.status)")
    #expect(
      (run.stderr + run.stdout).contains("\(path): cannot read it: it is a FIFO, not a regular file")
        || (run.stderr + run.stdout).contains("cannot read \(path): it is a FIFO, not a regular file"),
      "\(command): stderr: \(run.stderr) stdout: \(run.stdout)")
  }

  @Test func anUnreadableFileIsPermissionDenied() async throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("bb-io-0-\(UUID().uuidString)")
      .path
    _ = FileManager.default.createFile(
      atPath: path, contents: Data("{\"events\":[]}".utf8), attributes: [.posixPermissions: 0])
    defer { try? FileManager.default.removeItem(atPath: path) }
    let run = try await Self.run(["simulate", path])
    if geteuid() == 0 {
      // Root reads a mode-0 file; what matters is that it is read, not refused with a wrong word.
      #expect(run.status == 0, "stderr: \(run.stderr)")
    } else {
      Self.expectClean(run, saying: "cannot read \(path): permission denied", "mode 0 file")
    }
  }

  @Test(arguments: [
    ("{\"events\":[{\"at\":1e300,\"lost\":{\"address\":\"C0:FF:EE:00:00:01\"}}]}", "events[0].at must be"),
    (
      "{\"events\":[{\"at\":0,\"lost\":{\"address\":\"C0:FF:EE:00:00:01\"}},{\"at\":1000000001,\"tripStart\":{\"tripId\":\"t\"}}]}",
      "events[1].at must be a number of seconds from 0 to 1000000000"
    ),
    ("{\"duration\":1e19,\"events\":[]}", "duration must be a number of seconds from 0 to 1000000000"),
  ])
  func farFutureScenarioTimes(text: String, words: String) async throws {
    let run = try await Self.run(["simulate", "-"], stdin: .bytes(Array(text.utf8)))
    Self.expectClean(run, saying: words, text)
  }

  /// The latest time allowed plays, deadlines after it included.
  @Test func theLatestScenarioTimePlays() async throws {
    let text = """
      {"events":[{"at":0,"tripStart":{"tripId":"t"}},{"at":1000000000,"tripEnd":{"tripId":"t"}}]}
      """
    let run = try await Self.run(["simulate", "-"], stdin: .bytes(Array(text.utf8)))
    #expect(run.status == 0, "stderr: \(run.stderr)")
    #expect(run.stdout.contains("\"tripEnded\""))
  }

  /// A btsnoop record 2⁶² µs after the first (the extreme timestamp that trapped the clock).
  @Test func anExtremeCaptureTimestamp() async throws {
    var bytes = Array("btsnoop".utf8) + [0]
    bytes += [0, 0, 0, 1, 0, 0, 0x03, 0xEA]  // version 1, datalink 1002 (H4)
    func record(_ timestamp: UInt64) {
      let data: [UInt8] = [0x04, 0x0E, 0x00]
      for value in [UInt32(data.count), UInt32(data.count), 1, 0] {
        bytes += withUnsafeBytes(of: value.bigEndian, Array.init)
      }
      bytes += withUnsafeBytes(of: timestamp.bigEndian, Array.init)
      bytes += data
    }
    record(0x00dc_ddb3_0f2f_8000)
    record(0x00dc_ddb3_0f2f_8000 + (1 << 62))
    let run = try await Self.run(["replay", "-"], stdin: .bytes(bytes))
    Self.expectClean(run, saying: "record 2: its timestamp is more than 1000000000 s", "extreme timestamp")
  }

  /// The scenario fuzzer's corpus (seeds, and any crasher it ever found) as regression inputs:
  /// each decodes or is refused with a ScenarioError, and a decoded one plays to its end.
  @Test func scenarioFuzzCorpus() async throws {
    let folder = Self.root.appendingPathComponent("Fuzz/scenario/corpus")
    let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    #expect(names.count >= 4)
    for name in names {
      let data = try Data(contentsOf: folder.appendingPathComponent(name))
      do {
        let scenario = try Scenario.decode(data)
        #expect(scenario.end <= Scenario.maximumSeconds, "\(name)")
        try await ScenarioRunner(scenario: scenario).run(emit: { _ in })
      } catch let error as ScenarioError {
        #expect(!error.description.isEmpty)
      }
    }
  }

  @Test func theVirtualClockNeverTraps() {
    let clock = VirtualClock()
    clock.set(seconds: 5)
    clock.set(seconds: .nan)
    #expect(clock.now.offset == .seconds(5))
    clock.set(seconds: 1e300)
    clock.set(seconds: .infinity)
    #expect(clock.now.offset > .seconds(9_000_000_000))
  }

  // MARK: 2. Output is honest

  @Test(arguments: [Stdout.devFull, .closedPipe, .closed])
  func aFailedWriteEndsTheCommand(stdout: Stdout) async throws {
    let words =
      switch stdout {
      case .devFull: "cannot write to standard output: the disk is full"
      case .closedPipe: "cannot write to standard output: the reading end of the pipe is closed"
      default: "cannot write to standard output: it is closed"
      }
    for arguments in [
      ["simulate", Self.longScenario], ["--version"], ["demo", "--speed", "10000", "--json"],
    ] {
      let run = try await Self.run(arguments, stdout: stdout, timeout: 30)
      Self.expectClean(run, saying: words, "\(arguments.joined(separator: " ")) with stdout \(stdout)")
      // One line: it stopped at the first failed write (it wrote on for 30 s before).
      #expect(run.seconds < 30)
      #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
    }
  }

  /// G-Zone numbers at the edge of Double: the derived progress overflowed to "inf" before.
  @Test func gzoneJSONIsAlwaysJSON() async throws {
    let fixtures = Self.root.appendingPathComponent("Tests/Fixtures/gzone/load1")
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
      "bb-io-gz-\(UUID().uuidString)")
    try FileManager.default.copyItem(at: fixtures, to: folder)
    defer { try? FileManager.default.removeItem(at: folder) }
    try Data(#"{"experience": 1.7e308, "currency": -1.7e308}"#.utf8).write(
      to: folder.appendingPathComponent("player.json"))
    try Data(#"[{"levelName":"Edge","levelPointStart":-1.7e308,"levelPointEnd":1.7e308}]"#.utf8).write(
      to: folder.appendingPathComponent("experience-levels.json"))
    let run = try await Self.run(["gzone", "status", folder.path, "--json"])
    #expect(run.status == 0, "stderr: \(run.stderr)")
    #expect(!run.stdout.contains("inf") && !run.stdout.contains("nan"), "\(run.stdout)")
    let json = try JSONValue.parse(Data(run.stdout.utf8))
    #expect(json["level"]?["end"]?.doubleValue == 1.7e308)
  }

  @Test func nonFiniteNumbersWriteNull() {
    #expect(JSONValue.double(.infinity).compactText == "null")
    #expect(JSONValue.double(-.infinity).compactText == "null")
    #expect(JSONValue.double(.nan).compactText == "null")
    #expect(JSONValue.double(1.7e308).compactText == "1.7e+308")
    #expect(JSONValue.double(-Double.greatestFiniteMagnitude).compactText != "-inf")
  }

  // MARK: 3. An empty path is a usage error

  @Test(arguments: [
    ["simulate", ""],
    ["replay", ""],
    ["pairs", "--state-dir", ""],
    ["pairs", "--state-dir="],
    ["pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--device-id", "U", "--state-dir", ""],
    ["run", "--config", ""],
    ["doctor", "--config", ""],
    ["diagnose", "--export", ""],
    ["trip", "events", "--trip-id", "t1", ""],
    ["gzone", "status", ""],
  ])
  func emptyPaths(arguments: [String]) async throws {
    let run = try await Self.run(arguments)
    Self.expectClean(run, status: 64, saying: "empty string", arguments.debugDescription)
  }
}
