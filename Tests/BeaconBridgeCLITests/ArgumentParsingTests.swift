import BeaconBridgeCLI
import Testing

/// argv → what runs, without running anything.
@Suite struct ArgumentParsingTests {
  @Test func simulateTakesAFile() throws {
    guard case .command(let command) = try CLI.parse(["simulate", "drive.json"]) else {
      Issue.record("expected a command")
      return
    }
    #expect((command as? SimulateCommand)?.file == "drive.json")
    guard case .command(let stdin) = try CLI.parse(["simulate", "--json", "-"]) else { return }
    #expect((stdin as? SimulateCommand)?.file == "-")
  }

  @Test(arguments: [
    (["demo"], 10.0, false),
    (["demo", "--speed", "100"], 100.0, false),
    (["demo", "--speed=2.5", "--json"], 2.5, true),
  ])
  func demoOptions(argv: [String], speed: Double, json: Bool) throws {
    guard case .command(let command) = try CLI.parse(argv), let demo = command as? DemoCommand else {
      Issue.record("expected demo")
      return
    }
    #expect(demo.speed == speed)
    #expect(demo.json == json)
  }

  @Test(arguments: [
    (["frobnicate"], "unknown command 'frobnicate'"),
    (["--frobnicate"], "unknown option --frobnicate"),
    (["simulate"], "missing scenario FILE"),
    (["simulate", "a.json", "b.json"], "unexpected argument \"b.json\""),
    (["simulate", "a.json", "--fast"], "unknown option --fast"),
    (["demo", "--speed"], "--speed needs a value"),
    (["demo", "--speed", "fast"], "--speed must be a number"),
    (["demo", "--speed", "0"], "--speed must be between 1 and 10000"),
  ])
  func usageErrors(argv: [String], message: String) {
    #expect {
      _ = try CLI.parse(argv)
    } throws: { error in
      (error as? UsageError)?.description.contains(message) == true
    }
  }

  @Test(arguments: [
    ["--help"], ["-h"], [], ["help"], ["help", "demo"], ["demo", "--help"], ["simulate", "-h"],
  ])
  func helpEverywhere(argv: [String]) throws {
    guard case .help(let text) = try CLI.parse(argv) else {
      Issue.record("expected help for \(argv)")
      return
    }
    #expect(text.contains("USAGE"))
  }

  @Test func usageErrorsExit64OnStderr() async {
    let console = CapturingConsole()
    let status = await CLI.main(["simulate"], console: console)
    #expect(status == 64)
    #expect(console.stdout.isEmpty)
    #expect(console.stderr.contains("missing scenario FILE"))
    #expect(console.stderr.contains("--help"))
  }

  @Test func versionPrints() async {
    let console = CapturingConsole()
    #expect(await CLI.main(["--version"], console: console) == 0)
    #expect(console.stdout.hasPrefix("beaconbridge "))
  }
}
