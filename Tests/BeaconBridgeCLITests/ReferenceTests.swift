import BeaconBridgeCLI
import Testing

/// The man page and the shell completions are made from the usage and discussion text `--help`
/// prints (CommandReference). These check that that text names exactly the options the parser
/// accepts, and that the page and every completion script carry every command and option.
@Suite struct ReferenceTests {
  static let uuid = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"

  /// Valid argv per command (one per mode), to which one option at a time is added.
  static let bases: [String: [[String]]] = [
    "demo": [["demo"]], "simulate": [["simulate", "f.json"]],
    "pair": [
      ["pair", "--uuid", uuid, "--device-id", "X"], ["pair", "--nearest", "--device-id", "X"],
      ["pair", "--irk-file", "k", "--device-id", "X"],
    ],
    "provision": [
      [
        "provision", "--address", "AA:BB:CC:DD:EE:FF", "--lock-key-file", "k", "--rotation-exponent", "10",
        "--device-id", "X",
      ]
    ],
    "unpair": [["unpair", "--device-id", "X"]], "pairs": [["pairs"]], "replay": [["replay", "f"]],
    "scan": [["scan"]], "run": [["run"]], "status": [["status"]], "doctor": [["doctor"]],
    "diagnose": [["diagnose"]],
    "trip": [
      ["trip", "start", "--trip-id", "t"], ["trip", "events", "--trip-id", "t", "-"],
      ["trip", "end", "--trip-id", "t"], ["trip", "assign", "--trip-id", "t", "--device-id", "X"],
      ["trip", "retry"],
    ],
    "gzone": [["gzone", "status", "d"], ["gzone", "diff", "a", "b"], ["gzone", "refresh"]],
  ]

  /// A valid value for each option that takes one.
  static let samples: [String: String] = [
    "--speed": "10", "--uuid": uuid, "--major": "1", "--minor": "2", "--device-id": "X", "--label": "L",
    "--state-dir": "/tmp/x", "--wait": "3", "--backend": "bluez", "--adapter": "hci0",
    "--pair": "\(uuid)=X", "--duration": "5", "--config": "/x.conf", "--export": "b.tar.gz",
    "--capture": "5", "--lines": "10", "--trip-id": "t",
  ]

  /// Whether `command` accepts `option` in any of its modes (any error but "unknown option").
  func accepts(_ command: String, _ option: String, value: Bool) -> Bool {
    for base in Self.bases[command] ?? [] {
      if base.contains(option) { return true }
      let argv = base + [option] + (value ? [Self.samples[option] ?? "v"] : [])
      do {
        _ = try CLI.parse(argv)
        return true
      } catch {
        if !error.description.contains("unknown option \(option)") { return true }
      }
    }
    return false
  }

  @Test func everyCommandHasBases() {
    #expect(Set(CommandReference.all.map(\.name)) == Set(Self.bases.keys))
  }

  @Test func documentedOptionsAreExactlyTheAcceptedOnes() {
    let references = CommandReference.all
    var takesValue: [String: Bool] = [:]
    for reference in references {
      for option in reference.options {
        takesValue[option.name] = (takesValue[option.name] ?? false) || option.value != nil
      }
    }
    // Every option any command documents, and a few that none should take.
    let universe = Set(takesValue.keys).union(["--verbose", "--quiet", "--force", "--output", "--dry-run"])
    for reference in references {
      let documented = Set(reference.options.map(\.name))
      for option in universe.sorted() {
        let accepted = accepts(reference.name, option, value: takesValue[option] ?? false)
        #expect(
          accepted == documented.contains(option),
          "\(reference.name) \(accepted ? "accepts" : "refuses") \(option) but its help \(documented.contains(option) ? "names" : "does not name") it"
        )
      }
    }
  }

  @Test func optionValuesAreRead() throws {
    let pair = try #require(CommandReference.all.first { $0.name == "pair" })
    #expect(pair.options.first { $0.name == "--backend" }?.choices == ["bluez", "hci"])
    #expect(pair.options.first { $0.name == "--adapter" }?.value == "hciN")
    #expect(pair.options.first { $0.name == "--json" }?.value == nil)
    let replay = try #require(CommandReference.all.first { $0.name == "replay" })
    #expect(replay.options.first { $0.name == "--pair" }?.value == "UUID[:MAJOR[:MINOR]]=DEVICE_ID")
    #expect(replay.takesFiles)
    let trip = try #require(CommandReference.all.first { $0.name == "trip" })
    #expect(trip.actions == ["start", "events", "end", "assign", "retry"])
  }

  @Test func theManPageHasEveryCommandOptionAndExitStatus() throws {
    guard case .help(let page) = try CLI.parse(["help", "--man"]) else {
      Issue.record("help --man is not help text")
      return
    }
    for reference in CommandReference.all {
      #expect(page.contains(".SS \(reference.name)\n"), "no section for \(reference.name)")
      let section =
        try #require(page.components(separatedBy: ".SS \(reference.name)\n").last)
        .components(separatedBy: ".SS ").first ?? ""
      for option in reference.options {
        let escaped = option.name.replacingOccurrences(of: "-", with: "\\-")
        #expect(section.contains(escaped), "\(reference.name)'s section lacks \(option.name)")
      }
    }
    for status in ["0", "1", "2", "64"] { #expect(page.contains(".TP\n.B \(status)\n")) }
    for name in ["BEACONBRIDGE_STATE_DIR", "DBUS_SYSTEM_BUS_ADDRESS", "beaconbridge.conf (5)"] {
      #expect(page.contains(name))
    }
  }

  @Test(arguments: ["bash", "zsh", "fish"])
  func everyCompletionScriptHasEveryCommandAndOption(shell: String) throws {
    guard case .help(let script) = try CLI.parse(["help", "--completion", shell]) else {
      Issue.record("help --completion \(shell) is not help text")
      return
    }
    for reference in CommandReference.all {
      #expect(script.contains(reference.name), "\(shell): no \(reference.name)")
      for option in reference.options {
        let word = shell == "fish" ? "-l \(option.name.dropFirst(2))" : option.name
        #expect(script.contains(word), "\(shell): no \(option.name) for \(reference.name)")
      }
      for action in reference.actions { #expect(script.contains(action)) }
    }
    #expect(script.contains("/sys/class/bluetooth/hci"))
    #expect(script.contains("beaconbridge pairs --json"))
  }

  @Test func anUnknownShellIsAUsageError() {
    #expect(throws: UsageError.self) { try CLI.parse(["help", "--completion", "tcsh"]) }
  }
}
