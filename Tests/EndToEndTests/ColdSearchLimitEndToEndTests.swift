import BeaconCore
import BeaconTestSupport
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The limit on a cold search (docs/authentication.md, "The time a cold search may take") at the
/// daemon's doors, the real daemon as a process on a private dbus-daemon. At a week of tolerance
/// a pairing at K = 0 costs 1,209,642 AES operations a search, so 99 of them fit the limit
/// (119,754,558 of 120,000,000) and 100 do not; at a day each costs 172,810, and 101 fit.
@Suite(.tags(.process), .timeLimit(.minutes(3)))
struct ColdSearchLimitEndToEndTests {
  let cli = DaemonEndToEndTests()

  /// The store's EID pairings at K = 0 written straight into its table (as another tool or an
  /// older version could), numbered from `from`.
  func insertEIDPairings(_ range: Range<Int>, dir: String) async throws {
    let script = """
      import sqlite3, sys
      db = sqlite3.connect(sys.argv[1])
      for n in range(int(sys.argv[2]), int(sys.argv[3])):
          db.execute("INSERT INTO key_pairings (scheme, device_id, label, rotation_exponent, clock_offset,"
                     " heard_window, created_at, secret) VALUES ('eid', ?, NULL, 0, 0, NULL, 0, ?)",
                     ("UNIT-%d" % n, "%032x" % (n + 1)))
      db.commit()
      """
    let run = try await runProcess(
      "/usr/bin/python3",
      ["-c", script, dir + "/beaconbridge.sqlite", String(range.lowerBound), String(range.upperBound)])
    try #require(run.status == 0, "\(run.stderr)")
  }

  func pairEID(k: Int, n: Int, bus: String, dir: String) async throws -> ProcessRun {
    let keyFile = dir + "/eid-\(n).key"
    try (String(format: "%032x", n + 1) + "\n").write(toFile: keyFile, atomically: true, encoding: .utf8)
    #expect(chmod(keyFile, 0o600) == 0)
    defer { try? FileManager.default.removeItem(atPath: keyFile) }
    return try await cli.cli(
      [
        "pair", "--eid-key-file", keyFile, "--rotation-exponent", String(k), "--beacon-clock", "1000",
        "--device-id", "UNIT-\(n)",
      ], bus: bus, dir: dir)
  }

  func pairingCount(bus: String, dir: String) async throws -> Int? {
    let listed = try await cli.cli(["pairs", "--json"], bus: bus, dir: dir)
    return try JSONValue.parse(Data(listed.stdout.utf8)).arrayValue?.count
  }

  @Test func theDaemonsDoorsRefuseASearchPastTheLimit() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let dir = try scratchDirectory("coldsearch-e2e")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = dir + "/beaconbridge.conf"
    let week = "[ActiveBeacon]\neidClockTolerance = 604800\n"
    let day = "[ActiveBeacon]\neidClockTolerance = 86400\n"
    try week.write(toFile: config, atomically: true, encoding: .utf8)

    // The store made by the CLI's first pairing (no daemon runs), then 98 more: 99 at a week fit.
    #expect(try await pairEID(k: 0, n: 0, bus: bus.address, dir: dir).status == 0)
    try await insertEIDPairings(1..<99, dir: dir)
    let tooMany =
      "[ActiveBeacon] eidClockTolerance = 604800 s with 100 Eddystone-EID pairing(s), 100 of them fast-rotating"

    // D-Bus PairWithKey: the 100th at K = 0 is refused with the sentence, and the store keeps 99.
    do {
      let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
      try await waitUntil("the daemon serves its API; log:\n\(daemon.log)", timeout: .seconds(30)) {
        (try? await cli.cli(["status"], bus: bus.address, dir: dir).status) == 0
      }
      let refused = try await pairEID(k: 0, n: 500, bus: bus.address, dir: dir)
      #expect(refused.status == 1)
      #expect(refused.stderr.contains(tooMany), "\(refused.stderr)")
      #expect(refused.stderr.contains("lower eidClockTolerance"), "\(refused.stderr)")
      #expect(try await pairingCount(bus: bus.address, dir: dir) == 99)
      #expect(await daemon.stop(), "log:\n\(daemon.log)")
    }

    // The configuration load: with a 100th in the store, the week is refused and the daemon does
    // not start.
    try await insertEIDPairings(99..<100, dir: dir)
    do {
      let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
      #expect(await waitForExit(daemon.process), "log:\n\(daemon.log)")
      #expect(daemon.process.terminationStatus == 1)
      #expect(daemon.log.contains(tooMany), "log:\n\(daemon.log)")
      #expect(daemon.log.contains("not starting"), "log:\n\(daemon.log)")
    }

    // SIGHUP: a day lets the 100 run; the week again is refused and the day stays, so one more
    // at K = 0 fits (101 at a day).
    try day.write(toFile: config, atomically: true, encoding: .utf8)
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
    try await waitUntil("the daemon serves its API; log:\n\(daemon.log)", timeout: .seconds(30)) {
      (try? await cli.cli(["status"], bus: bus.address, dir: dir).status) == 0
    }
    try week.write(toFile: config, atomically: true, encoding: .utf8)
    kill(daemon.process.processIdentifier, SIGHUP)
    try await waitUntil("the reload refused; log:\n\(daemon.log)") {
      daemon.log.contains("configuration not reloaded, the old one stays: \(tooMany)")
    }
    let paired = try await pairEID(k: 0, n: 501, bus: bus.address, dir: dir)
    #expect(paired.status == 0, "\(paired.stderr)")
    #expect(try await pairingCount(bus: bus.address, dir: dir) == 101)
    #expect(await daemon.stop(), "log:\n\(daemon.log)")
  }
}
