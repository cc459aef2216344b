import BeaconCore
import BeaconTestSupport
import BlueZ
import BlueZTestSupport
import DBus
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The support bundle: a real .tar.gz with a manifest, secrets kept out, with or without the
/// daemon.
@Suite(.tags(.process), .timeLimit(.minutes(5)))
struct DiagnoseTests {
  struct Bundle {
    var files: [String: String]
    var listing: [String]
  }

  func diagnose(bus: String, dir: String, config: String) async throws -> (status: Int32, bundle: Bundle) {
    let output = dir + "/bundle.tar.gz"
    let result = try await DaemonEndToEndTests().cli(
      ["diagnose", "--export", output, "--config", config, "--state-dir", dir], bus: bus, dir: dir)
    // List with the standard tar, then unpack.
    func run(_ arguments: [String]) async throws -> String {
      try await runProcess("/bin/tar", arguments).stdout
    }
    let listing = try await run(["-tzf", output]).split(separator: "\n").map(String.init)
    let unpacked = dir + "/unpacked"
    try? FileManager.default.removeItem(atPath: unpacked)
    try FileManager.default.createDirectory(atPath: unpacked, withIntermediateDirectories: true)
    _ = try await run(["-xzf", output, "-C", unpacked])
    var files: [String: String] = [:]
    let folder = try #require(try FileManager.default.contentsOfDirectory(atPath: unpacked).first)
    for name in try FileManager.default.contentsOfDirectory(atPath: unpacked + "/" + folder) {
      files[name] = try String(contentsOfFile: unpacked + "/" + folder + "/" + name, encoding: .utf8)
    }
    return (result.status, Bundle(files: files, listing: listing))
  }

  func prepare() throws -> (dir: String, config: String) {
    let dir = try scratchDirectory("diag")
    try writeTokenFile("tok-9f8e7d6c5b\n", to: dir + "/token")
    let config = dir + "/beaconbridge.conf"
    try """
    [Upload]
    URL = https://fleet:pa55word-x@127.0.0.1:9/trips?token=q-secret-1&x=1
    TokenFile = \(dir)/token
    [GZone]
    ExperienceLevelsURL = https://gz:gz-pass-9@127.0.0.1:9/levels?sig=g-sig-1
    PlayerURL = https://gz:gz-pass-9@127.0.0.1:9/players?sig=g-sig-1
    AvailableGamesURL = https://gz:gz-pass-9@127.0.0.1:9/games?sig=g-sig-1
    GameRoundsURL = https://gz:gz-pass-9@127.0.0.1:9/rounds?sig=g-sig-1
    [Trips]
    unresolvedPolicy = fallback
    fallbackDeviceId = DEPOT-1
    lateWindow = 0
    """.write(toFile: config, atomically: true, encoding: .utf8)
    return (dir, config)
  }

  func expectNoSecrets(_ bundle: Bundle) {
    for (name, text) in bundle.files {
      for secret in ["tok-9f8e7d6c5b", "pa55word-x", "q-secret-1", "gz-pass-9", "g-sig-1"] {
        #expect(!text.contains(secret), "\(name) leaks \(secret)")
      }
    }
    #expect(bundle.files["token"] == nil)
  }

  @Test func daemonStoppedStillExportsAndNamesWhatIsMissing() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let (dir, config) = try prepare()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let (status, bundle) = try await diagnose(bus: bus.address, dir: dir, config: config)
    // The daemon never ran here: the store is "not found", a finding named in the bundle (its
    // MANIFEST.txt and doctor's checks), which is written all the same (exit 0); and diagnose,
    // which only reads, does not make one.
    #expect(status == 0)
    #expect(!FileManager.default.fileExists(atPath: dir + "/beaconbridge.sqlite"))
    #expect(bundle.listing.contains { $0.hasSuffix("/MANIFEST.txt") })
    let manifest = try #require(bundle.files["MANIFEST.txt"])
    for name in bundle.files.keys where name != "MANIFEST.txt" {
      #expect(manifest.contains(name), "MANIFEST.txt does not name \(name)")
    }
    #expect(manifest.contains("MISSING"))
    #expect(manifest.contains("status.json") && manifest.contains("daemon is not running"))
    #expect(manifest.contains("\(dir)/beaconbridge.sqlite was not found"))
    #expect(bundle.files["doctor.json"] != nil)
    #expect(bundle.files["versions.txt"]?.contains("beaconbridge") == true)
    #expect(bundle.files["beaconbridge.conf"]?.contains("<redacted>") == true)
    expectNoSecrets(bundle)
  }

  @Test func againstTheRunningDaemon() async throws {
    let fixture = try await BlueZFixture.start()
    defer { fixture.stop() }
    try await fixture.addAdapter("hci0")
    let (dir, config) = try prepare()
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: fixture.bus.address)
    defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
    let test = DaemonEndToEndTests()
    try await waitUntil("the condition at this line", timeout: .seconds(20)) {
      (try? await test.cli(["status"], bus: fixture.bus.address, dir: dir).status) == 0
    }
    // A trip with a batch that fails to upload (nothing listens on port 9): a decision, a log line.
    let started = try await test.cli(
      ["trip", "start", "--trip-id", "t1"], bus: fixture.bus.address, dir: dir)
    #expect(started.status == 0, "\(started.stderr)")
    // With lateWindow 0 the trip takes the fallback on the next tick: a tagging decision.
    try await waitUntil("the condition at this line") {
      let status = try JSONValue.parse(
        Data(try await test.cli(["status", "--json"], bus: fixture.bus.address, dir: dir).stdout.utf8))
      return status["trips"]?.arrayValue?.first?["deviceId"]?.stringValue == "DEPOT-1"
    }
    // The daemon logs the failed G-Zone load (nothing listens on port 9) with its URL, redacted;
    // wait until that line is in the bundle.
    var (status, bundle) = try await diagnose(bus: fixture.bus.address, dir: dir, config: config)
    // Whichever of the four requests fails first is named.
    let gzoneLine = try Regex(
      #"G-Zone load failed: https://<redacted>@127\.0\.0\.1:9/[a-z]+\?sig=<redacted>"#)
    try await waitUntil("the G-Zone failure in logs.txt", poll: .milliseconds(500)) {
      (status, bundle) = try await diagnose(bus: fixture.bus.address, dir: dir, config: config)
      return bundle.files["logs.txt"]?.contains(gzoneLine) == true
    }
    #expect(status == 0)
    #expect(bundle.files["status.json"]?.contains("\"scanning\"") == true)
    #expect(bundle.files["adapters.json"]?.contains("hci0") == true)
    #expect(
      bundle.files["logs.txt"]?.contains("ready") == true, "logs.txt: \(bundle.files["logs.txt"] ?? "none")")
    #expect(bundle.files["decisions.json"]?.contains("t1") == true)
    #expect(
      bundle.files["logs.txt"]?.contains(gzoneLine) == true,
      "logs.txt: \(bundle.files["logs.txt"] ?? "none")")
    expectNoSecrets(bundle)
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon), "daemon did not exit in time")
  }
}
