import BeaconBridgeCLI
import BeaconCore
import BridgeDaemon
import Testing

/// argv → parsed command, for every command (swift-argument-parser's cheap, strong test).
@Suite struct CommandTableTests {
  func command(_ argv: [String]) throws -> any BridgeCommand {
    guard case .command(let command) = try CLI.parse(argv) else { throw UsageError("not a command") }
    return command
  }

  @Test func scanOptions() throws {
    let scan = try #require(
      try command(["scan", "--duration", "5", "--backend", "hci", "--adapter", "hci1", "--json"])
        as? ScanCommand)
    #expect(scan.duration == 5)
    #expect(scan.backend == .hci)
    #expect(scan.adapter?.name == "hci1")
    #expect(scan.json)
    let plain = try #require(try command(["scan"]) as? ScanCommand)
    #expect(plain.duration == nil)
    #expect(plain.backend == .bluez)
  }

  @Test func runOptions() throws {
    let run = try #require(
      try command(["run", "--config", "/etc/x.conf", "--state-dir", "/tmp/s"]) as? RunCommand)
    #expect(run.configPath == "/etc/x.conf")
  }

  @Test(arguments: [
    ["status"], ["status", "--json"], ["doctor"], ["doctor", "--json", "--config", "/x"], ["diagnose"],
    ["diagnose", "--export", "b.tar.gz", "--capture", "5"], ["trip", "start", "--trip-id", "t1"],
    ["trip", "events", "--trip-id", "t1", "-"], ["trip", "end", "--trip-id", "t1"],
    ["trip", "assign", "--trip-id", "t1", "--device-id", "X"], ["trip", "retry"],
    ["pair", "--nearest", "--device-id", "X"],
    ["pair", "--nearest", "--wait", "3", "--backend", "hci", "--device-id", "X"],
    ["replay", "capture.btsnoop", "--json"],
  ])
  func validCommandsParse(argv: [String]) throws {
    _ = try command(argv)
  }

  @Test(arguments: [
    (["scan", "--backend", "carrier-pigeon"], "--backend must be bluez or hci"),
    (["scan", "--adapter", "wlan0"], "--adapter: adapter \"wlan0\" is not valid; an adapter is hci"),
    (["scan", "--duration", "-1"], "--duration must be between"),
    (["trip"], "missing action"),
    (["trip", "fly", "--trip-id", "t"], "unknown trip action 'fly'"),
    (["trip", "start"], "trip start needs --trip-id"),
    (["trip", "events", "--trip-id", "t"], "missing events FILE"),
    (["trip", "assign", "--trip-id", "t"], "trip assign needs --device-id"),
    (["diagnose", "--export", "bundle.zip"], "--export must name a .tar.gz file"),
    (["pair", "--nearest"], "pair needs --device-id"),
    (["pair", "--nearest", "--wait", "0", "--device-id", "X"], "--wait must be between"),
    (["run", "--bogus"], "unknown option --bogus"),
  ])
  func usageErrors(argv: [String], message: String) {
    #expect {
      _ = try CLI.parse(argv)
    } throws: { error in
      (error as? UsageError)?.description.contains(message) == true
    }
  }

  @Test func everyCommandHasHelp() throws {
    for type in CLI.commands {
      guard case .help(let text) = try CLI.parse([type.name, "--help"]) else {
        Issue.record("no help for \(type.name)")
        continue
      }
      #expect(text.contains("USAGE: beaconbridge"), "\(type.name)")
      #expect(CLI.mainHelp.contains(type.name))
    }
  }
}
