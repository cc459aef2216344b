import BeaconCore
import BeaconTestSupport
import Foundation
import GZone
import Synchronization
import Testing

@testable import BridgeDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// The daemon's G-Zone parts: the `[GZone]` section, the HTTP source against a real loopback
/// server, and the poller over a real store (restart does not replay).
@Suite(.serialized) struct GZoneDaemonTests {
  static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .appendingPathComponent("Fixtures/gzone")

  static func configuration(base: String) -> GZoneConfiguration {
    let text = """
      [GZone]
      ExperienceLevelsURL = \(base)/gzone/experience-levels.json
      PlayerURL = \(base)/players/{unitId}/player.json
      AvailableGamesURL = \(base)/players/{unitId}/users/{userId}/available-games.json
      GameRoundsURL = \(base)/policies/{policyNumber}/game-rounds.json
      UnitId = 4711
      PolicyNumber = P 12/3
      UserId = u-9
      Interval = 60
      """
    return try! DaemonConfiguration.parse(text, file: "test.conf").gzone
  }

  // MARK: configuration

  @Test func theSectionParses() throws {
    let config = Self.configuration(base: "https://api.example")
    #expect(config.isEnabled)
    #expect(config.interval == 60)
    #expect(config.url(for: .player) == "https://api.example/players/4711/player.json")
    #expect(config.url(for: .gameRounds) == "https://api.example/policies/P%2012%2F3/game-rounds.json")
    #expect(
      config.url(for: .availableGames) == "https://api.example/players/4711/users/u-9/available-games.json")
    #expect(try DaemonConfiguration.parse("", file: "x").gzone.isEnabled == false)
  }

  @Test(arguments: [
    ("[GZone]\nPlayerURL = ftp://x\n", "x.conf:2: PlayerURL must start with http:// or https://"),
    (
      "[GZone]\nInterval = 1\n",
      "x.conf:2: Interval \"1\" is out of range; set a number of seconds from 10 to 86400"
    ),
    ("[GZone]\nColour = red\n", "x.conf:2: unknown key Colour in [GZone]"),
    ("[GZone]\nTokenFile = token\n", "x.conf:2: TokenFile must be an absolute path"),
    (
      "[GZone]\nPlayerURL = http://h/{unitId}\n",
      "x.conf: [GZone] needs all four URLs; ExperienceLevelsURL is missing"
    ),
    (
      "[GZone]\nExperienceLevelsURL = http://h/a\nPlayerURL = http://h/{unitId}\nAvailableGamesURL = http://h/c\nGameRoundsURL = http://h/d\n",
      "x.conf: [GZone] PlayerURL uses {unitId} but UnitId is not set"
    ),
  ])
  func badSectionsAreRefused(text: String, message: String) {
    #expect {
      try DaemonConfiguration.parse(text, file: "x.conf")
    } throws: { error in
      (error as? KeyFileError)?.description.hasPrefix(message) == true
    }
  }

  // MARK: the HTTP source

  func tokenFile(_ token: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent(
      "gzone-token-\(UUID().uuidString)"
    ).path
    try writeTokenFile(token + "\n", to: path)
    return path
  }

  @Test func theHTTPSourceLoadsInParallelWithTheToken() async throws {
    let backend = try await FakeBackend([
      "--serve-dir", Self.fixtures.appendingPathComponent("load1").path, "--get-barrier", "4", "--token",
      "g-secret",
    ])
    let token = try tokenFile("g-secret")
    defer { try? FileManager.default.removeItem(atPath: token) }
    var config = Self.configuration(base: backend.base)
    config.tokenFile = token
    // The barrier holds each GET until all four are in flight: a sequential load would time out.
    let load = try await HTTPGZoneSource(configuration: config, timeout: 10).load()
    #expect(GZoneState(load).level?.name == "Silver")
    let received = backend.received()
    #expect(received.count == 4)
    #expect(received.allSatisfy { $0.status == "200" && $0.auth == "Bearer g-secret" })
    #expect(
      Set(received.compactMap(\.body.stringValue)) == [
        "/gzone/experience-levels.json", "/players/4711/player.json",
        "/players/4711/users/u-9/available-games.json", "/policies/P%2012%2F3/game-rounds.json",
      ])
  }

  @Test func oneFailingRequestFailsTheWholeLoad() async throws {
    let backend = try await FakeBackend([
      "--serve-dir", Self.fixtures.appendingPathComponent("load1").path, "--fail-path", "game-rounds",
    ])
    let config = Self.configuration(base: backend.base)
    await #expect {
      try await HTTPGZoneSource(configuration: config, timeout: 10).load()
    } throws: { error in
      (error as? GZoneError)?.description == "\(backend.base)/policies/P%2012%2F3/game-rounds.json: HTTP 503"
    }
  }

  @Test func aWrongTokenIsAnHTTPError() async throws {
    let backend = try await FakeBackend([
      "--serve-dir", Self.fixtures.appendingPathComponent("load1").path, "--token", "right",
    ])
    let token = try tokenFile("wrong")
    defer { try? FileManager.default.removeItem(atPath: token) }
    await #expect {
      try await HTTPGZoneSource(
        configuration: Self.configuration(base: backend.base), fallbackTokenFile: token
      )
      .load()
    } throws: { error in (error as? GZoneError)?.message == "HTTP 401" }
  }

  /// The token-file rule holds for G-Zone too: a world-readable token is not sent, no request
  /// is made, and the error names the file and the fix.
  @Test func aWorldReadableTokenIsNotSent() async throws {
    let backend = try await FakeBackend(["--serve-dir", Self.fixtures.appendingPathComponent("load1").path])
    let token = try tokenFile("g-secret")
    defer { try? FileManager.default.removeItem(atPath: token) }
    #expect(chmod(token, 0o644) == 0)
    await #expect {
      try await HTTPGZoneSource(
        configuration: Self.configuration(base: backend.base), fallbackTokenFile: token
      )
      .load()
    } throws: { error in
      let message = (error as? GZoneError)?.description ?? ""
      return message.contains("not requested") && message.contains(token) && message.contains("mode 0644")
        && message.contains("chmod 0640")
    }
    #expect(backend.received().isEmpty)
  }

  /// Errors name the URL without its credentials or secret parameters.
  @Test func errorsNameTheURLRedacted() async throws {
    let backend = try await FakeBackend([
      "--serve-dir", Self.fixtures.appendingPathComponent("bad-json").path,
    ])
    var config = Self.configuration(base: backend.base)
    let withSecrets = backend.base.replacingOccurrences(of: "://", with: "://gz:gz-pass-9@")
    config.urls[.player] = "\(withSecrets)/players/{unitId}/player.json?sig=g-sig-1"
    await #expect {
      try await HTTPGZoneSource(configuration: config).load()
    } throws: { error in
      let text = (error as? GZoneError)?.description ?? ""
      return !text.contains("gz-pass-9") && !text.contains("g-sig-1") && text.contains("<redacted>@")
        && text.contains("sig=<redacted>")
    }
  }

  @Test func aMalformedPayloadOverHTTPNamesItsURL() async throws {
    let backend = try await FakeBackend([
      "--serve-dir", Self.fixtures.appendingPathComponent("bad-json").path,
    ])
    await #expect {
      try await HTTPGZoneSource(configuration: Self.configuration(base: backend.base)).load()
    } throws: { error in
      let error = error as? GZoneError
      return error?.code == .invalidJSON && error?.origin == "\(backend.base)/players/4711/player.json"
    }
  }

  // MARK: the poller

  final class Box: Sendable {
    let folder = Mutex("load1")
    let events = Mutex<[GZoneEvent]>([])
    let lines = Mutex<[String]>([])
  }

  func poller(_ store: Store, _ box: Box, enabled: Bool = true) -> GZonePoller {
    var settings = enabled ? Self.configuration(base: "http://unused") : GZoneConfiguration()
    settings.afterUploadDelay = 0
    let config = settings
    return GZonePoller(
      store: store, settings: { (config, nil) },
      makeSource: { _, _ in
        DirectoryGZoneSource(directory: Self.fixtures.appendingPathComponent(box.folder.withLock { $0 }).path)
      },
      log: { _, line in box.lines.withLock { $0.append(line) } },
      emit: { event in box.events.withLock { $0.append(event) } })
  }

  @Test func thePollerDiffsAgainstTheStoredLoadAndRestartDoesNotReplay() async throws {
    let dir = scratchPath("gzone")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let box = Box()
    do {
      let poller = poller(try Store(directory: dir), box)
      let first = try await poller.refresh(reason: "test")
      #expect(first.baseline && first.events.isEmpty)
      #expect(try await poller.refresh(reason: "test").events.isEmpty)
      box.folder.withLock { $0 = "load2" }
      let second = try await poller.refresh(reason: "test")
      #expect(!second.baseline)
      #expect(second.events.map(\.type).contains("levelUp"))
      #expect(box.events.withLock { $0 } == second.events)
      #expect(box.lines.withLock { $0 }.contains { $0.hasPrefix("G-Zone levelUp: {\"type\":\"levelUp\"") })
      // A bad load changes nothing.
      box.folder.withLock { $0 = "bad-shape" }
      await #expect(throws: GZonePollerError.self) { try await poller.refresh(reason: "test") }
    }
    // Restart: a new store and poller on the same directory, the backend unchanged.
    box.folder.withLock { $0 = "load2" }
    box.events.withLock { $0 = [] }
    let restarted = poller(try Store(directory: dir), box)
    let again = try await restarted.refresh(reason: "restart")
    #expect(!again.baseline)
    #expect(again.events.isEmpty)
    #expect(box.events.withLock { $0 }.isEmpty)
  }

  @Test func withoutConfigurationRefreshSaysSo() async throws {
    let dir = scratchPath("gzone")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let poller = poller(try Store(directory: dir), Box(), enabled: false)
    await #expect(throws: GZonePollerError.notConfigured) { try await poller.refresh(reason: "test") }
    #expect(GZonePollerError.notConfigured.description.contains("no G-Zone configured"))
  }

  @Test func concurrentRefreshesShareOneLoad() async throws {
    let dir = scratchPath("gzone")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let box = Box()
    let poller = poller(try Store(directory: dir), box)
    _ = try await poller.refresh(reason: "baseline")
    box.folder.withLock { $0 = "load2" }
    async let a = poller.refresh(reason: "a")
    async let b = poller.refresh(reason: "b")
    let total = try await a.events.count + b.events.count
    // Either they shared one load (both report its events) or ran one after the other (the
    // second saw nothing new); the events were emitted once either way.
    #expect(total > 0)
    #expect(box.events.withLock { $0.count } == 8)
  }

  @Test func aPostedBatchTriggersOneReload() async throws {
    let dir = scratchPath("gzone")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let box = Box()
    let poller = poller(try Store(directory: dir), box)
    _ = try await poller.refresh(reason: "baseline")
    box.folder.withLock { $0 = "load2" }
    // Five uploads, all scheduled before the reload runs (what `tripUploaded` does on its task).
    for _ in 0..<5 { await poller.scheduleAfterUpload() }
    try await waitUntil("the reload's 8 events") { box.events.withLock { $0.count } >= 8 }
    #expect(box.events.withLock { $0.count } == 8)
    // A second reload would have been scheduled with the others; there is exactly one.
    #expect(box.lines.withLock { $0 }.filter { $0.contains("(trip uploaded)") }.count == 1)
    // The public entry point schedules the same reload.
    poller.tripUploaded()
    try await waitUntil("a second reload") {
      box.lines.withLock { $0 }.filter { $0.contains("(trip uploaded)") }.count >= 2
    }
    #expect(box.lines.withLock { $0 }.filter { $0.contains("(trip uploaded)") }.count == 2)
  }
}
