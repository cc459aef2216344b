import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBus
import DBusTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The G-Zone poller in the running daemon, on a private bus, loading from a loopback backend:
/// the first load is the baseline, `gzone refresh` returns the events and the daemon signals
/// them as `GZoneEvent`, and a restart does not replay them.
@Suite(.tags(.process), .timeLimit(.minutes(5)))
struct GZoneEndToEndTests {
  static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .appendingPathComponent("Fixtures/gzone")

  func serve(_ load: String, into folder: String) throws {
    for name in ["experience-levels.json", "player.json", "available-games.json", "game-rounds.json"] {
      let target = folder + "/" + name
      try? FileManager.default.removeItem(atPath: target)
      try FileManager.default.copyItem(
        atPath: Self.fixtures.appendingPathComponent(load).appendingPathComponent(name).path, toPath: target)
    }
  }

  /// Starts `beaconbridge run`; returns it and a reader of its log.
  func startDaemon(config: String, dir: String, bus: String) throws -> (Process, @Sendable () -> String) {
    let logPath = dir + "/daemon-\(UUID().uuidString.prefix(6)).log"
    // A home of its own, to see what the daemon writes there (no URL cache: the G-Zone requests
    // go through libcurl, which keeps no cache or cookie store on disk).
    let daemon = try launchDaemon(
      config: config, stateDirectory: dir, bus: bus, environment: ["HOME": dir + "/home"], log: logPath)
    return (daemon, { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" })
  }

  func stop(_ daemon: Process) async {
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon), "the daemon did not exit in time")
  }

  @Test func refreshSignalsAndRestartDoesNotReplay() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
      "bb-gzone-e2e-\(UUID().uuidString)"
    )
    .path
    let served = dir + "/served"
    try FileManager.default.createDirectory(atPath: served, withIntermediateDirectories: true)
    try FileManager.default.createDirectory(atPath: dir + "/home", withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try serve("load1", into: served)
    let backend = try await FakeBackend(["--serve-dir", served, "--token", "gz"])
    try writeTokenFile("gz\n", to: dir + "/token")
    let config = dir + "/beaconbridge.conf"
    try """
    [GZone]
    ExperienceLevelsURL = \(backend.base)/levels/experience-levels.json
    PlayerURL = \(backend.base)/players/{unitId}/player.json
    AvailableGamesURL = \(backend.base)/players/{unitId}/available-games.json
    GameRoundsURL = \(backend.base)/policies/{policyNumber}/game-rounds.json
    UnitId = 4711
    PolicyNumber = P-1
    TokenFile = \(dir)/token
    Interval = 3600

    """.write(toFile: config, atomically: true, encoding: .utf8)
    let cli = DaemonEndToEndTests()
    let bus = fixture.bus.address

    let (daemon, log) = try startDaemon(config: config, dir: dir, bus: bus)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    try await waitUntil("daemon log:\n\(log())") { log().contains("G-Zone: first load") }

    let watcher = try Connection(.address(bus))
    defer { watcher.close() }
    let subscription = try await watcher.subscribe(
      to: MatchRule(interface: "org.beaconbridge.Bridge1", member: "GZoneEvent"))
    let signals = Mutex<[[DBusValue]]>([])
    let reader = Task {
      for await batch in subscription.batches { signals.withLock { $0 += batch.map(\.body) } }
    }
    defer { reader.cancel() }

    try serve("load2", into: served)
    let refreshed = try await cli.cli(["gzone", "refresh", "--json"], bus: bus, dir: dir)
    #expect(refreshed.status == 0, "\(refreshed.stderr)\ndaemon log:\n\(log())")
    let lines = try refreshed.stdout.split(separator: "\n").map { try JSONValue.parse(Data($0.utf8)) }
    let types = lines.compactMap { $0["type"]?.stringValue }
    #expect(types.count == 8)
    #expect(types.contains("levelUp") && types.contains("currencyChanged"))
    #expect(refreshed.stdout.hasPrefix("{\"type\":"))
    try await waitUntil("the condition at this line") { signals.withLock { $0.count } == 8 }
    let first = signals.withLock { $0.first } ?? []
    #expect(first.first?.string == types.first)
    #expect(try JSONValue.parse(Data((first.last?.string ?? "").utf8))["type"]?.stringValue == types.first)
    #expect(log().contains("G-Zone levelUp: {\"type\":\"levelUp\""))
    let again = try await cli.cli(["gzone", "refresh"], bus: bus, dir: dir)
    #expect(again.stdout == "No changes.\n", "\(again.stderr)")
    // Three loads over HTTP and no URL cache on disk (URLSession.shared, used before libcurl, kept one in ~/.cache).
    let home = try FileManager.default.contentsOfDirectory(atPath: dir + "/home")
    #expect(!home.contains(".cache"), "the daemon wrote \(home) into its home")
    #expect(!FileManager.default.fileExists(atPath: dir + "/.cache"))

    // Restart on the same store: the interval load at start-up diffs against the stored load.
    await stop(daemon)
    let (restarted, restartedLog) = try startDaemon(config: config, dir: dir, bus: bus)
    defer { if restarted.isRunning { kill(restarted.processIdentifier, SIGKILL) } }
    try await waitUntil("\(restartedLog())") {
      restartedLog().contains("G-Zone: loaded (interval): 0 event(s)")
    }
    #expect(!restartedLog().contains("G-Zone levelUp"))
    await stop(restarted)

    // Without [GZone] the refresh says so.
    try "[General]\nbackend = bluez\n".write(toFile: config, atomically: true, encoding: .utf8)
    let (plain, plainLog) = try startDaemon(config: config, dir: dir, bus: bus)
    defer { if plain.isRunning { kill(plain.processIdentifier, SIGKILL) } }
    try await waitUntil("\(plainLog())") { (try? await cli.cli(["status"], bus: bus, dir: dir))?.status == 0 }
    let unconfigured = try await cli.cli(["gzone", "refresh"], bus: bus, dir: dir)
    #expect(unconfigured.status == 1)
    #expect(unconfigured.stderr.contains("no G-Zone configured"), "\(unconfigured.stderr)")
    await stop(plain)
  }
}
