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
    (["unpair", "--device-id", "a", "--device-id", "b"], "--device-id given twice"),
    (["unpair", "--device-id=a", "--device-id", "a"], "--device-id given twice"),
    (["pairs", "--json", "--json"], "--json given twice"),
    (["doctor", "--state-dir", "/a", "--state-dir=/b"], "--state-dir given twice"),
    (["help", "nosuchcommand"], "help: unknown command \"nosuchcommand\""),
    (["--help", "nosuchcommand"], "--help: unknown command \"nosuchcommand\""),
    (["help", "pair", "extra"], "unexpected argument \"extra\""),
    (["--version", "extra"], "--version: unexpected argument \"extra\""),
    (["doctor", "--json=1"], "--json takes no value"),
    (["help", "--completion"], "help --completion needs a shell"),
    (["help", "--man", "x"], "help --man: unexpected argument \"x\""),
    (
      ["pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--wait", "5", "--device-id", "x"],
      "--wait needs --nearest"
    ),
    (
      ["pair", "--nearest", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--device-id", "x"],
      "--uuid cannot be used with --nearest"
    ),
    (["frob\u{1B}[31m"], "unknown command 'frob\\u{1B}[31m'"),
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

  /// A byte that is not UTF-8 is refused by name, never repaired to U+FFFD.
  @Test func nonUTF8ArgumentsAreAUsageError() async throws {
    #expect(try CLI.arguments([Array("pairs".utf8)]) == ["pairs"])
    let bad: [[UInt8]] = [Array("unpair".utf8), Array("--device-id".utf8), [0x63, 0x61, 0x66, 0xFF]]
    #expect {
      _ = try CLI.arguments(bad)
    } throws: { error in
      (error as? UsageError)?.description.hasPrefix(
        "the value of --device-id is not valid UTF-8 (\"caf\\xFF\")")
        == true
    }
    #expect(throws: UsageError.self) { _ = try CLI.arguments([[0xC3]]) }
    let console = CapturingConsole()
    #expect(await CLI.main(raw: bad, console: console) == ExitStatus.usage)
    #expect(console.stderr.contains("--device-id is not valid UTF-8"))
    #expect(console.stdout.isEmpty)
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
