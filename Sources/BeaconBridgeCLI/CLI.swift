import BeaconCore
import BridgeDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// One subcommand: its name and help, how it parses, and what it does.
///
/// The conventions are swift-argument-parser's: one value type per command, parse then run,
/// `--help` everywhere, exit 0 / 1 / 64.
public protocol BridgeCommand: Sendable {
  static var name: String { get }
  /// One line for the command list.
  static var abstract: String { get }
  /// The full `--help` text after the usage line.
  static var usage: String { get }
  static var discussion: String { get }

  /// Parses and validates the command's arguments, without doing anything.
  init(_ arguments: inout Arguments) throws(UsageError)

  /// Does the work; returns the exit status.
  func run(_ console: any Console) async -> Int32
}

/// Exit statuses (docs/DESIGN.md, Contracts).
public enum ExitStatus {
  public static let success: Int32 = 0
  public static let failure: Int32 = 1
  /// EX_USAGE from sysexits.h.
  public static let usage: Int32 = 64
}

public enum CLI {
  /// The daemon's version, the one string the CLI, the daemon and the Makefile read.
  public static let version = Daemon.version

  /// The subcommands, in the order `--help` lists them.
  public static let commands: [any BridgeCommand.Type] = [
    DemoCommand.self,
    SimulateCommand.self,
    PairCommand.self,
    ProvisionCommand.self,
    UnpairCommand.self,
    PairsCommand.self,
    ReplayCommand.self,
    ScanCommand.self,
    RunCommand.self,
    StatusCommand.self,
    DoctorCommand.self,
    DiagnoseCommand.self,
    TripCommand.self,
    GZoneCommand.self,
  ]

  /// What an argv asks for.
  public enum Invocation: Sendable {
    case help(String)
    case version
    case command(any BridgeCommand)
  }

  /// Parses argv (without the program name). Pure: nothing runs.
  public static func parse(_ argv: [String]) throws(UsageError) -> Invocation {
    guard let first = argv.first else { return .help(mainHelp) }
    switch first {
    case "--help", "-h", "help":
      // Hidden, for packaging: the man page and the shell completions, from this table.
      if first == "help", argv.count >= 2, argv[1] == "--man" {
        guard argv.count == 2 else {
          throw UsageError("help --man: unexpected argument \(argv[2].quotedForMessage)")
        }
        return .help(ManPage.page)
      }
      if first == "help", argv.count >= 2, argv[1] == "--completion" {
        guard argv.count == 3 else {
          throw UsageError(
            argv.count == 2
              ? "help --completion needs a shell: \(Completions.shells.joined(separator: ", "))"
              : "help --completion: unexpected argument \(argv[3].quotedForMessage)")
        }
        guard let script = Completions.script(for: argv[2]) else {
          throw UsageError(
            "--completion takes \(Completions.shells.joined(separator: ", ")), not \(argv[2].quotedForMessage)"
          )
        }
        return .help(script)
      }
      guard argv.count > 1 else { return .help(mainHelp) }
      guard let command = commands.first(where: { $0.name == argv[1] }) else {
        throw UsageError("\(first): unknown command \(argv[1].quotedForMessage)")
      }
      guard argv.count == 2 else {
        throw UsageError("\(first) \(command.name): unexpected argument \(argv[2].quotedForMessage)")
      }
      return .help(help(for: command))
    case "--version":
      guard argv.count == 1 else {
        throw UsageError("--version: unexpected argument \(argv[1].quotedForMessage)")
      }
      return .version
    default: break
    }
    guard let type = commands.first(where: { $0.name == first }) else {
      if first.hasPrefix("-") { throw UsageError("unknown option \(first.escapingControlCharacters)") }
      throw UsageError("unknown command '\(first.escapingControlCharacters)'")
    }
    let rest = Array(argv.dropFirst())
    if rest.contains("--help") || rest.contains("-h") { return .help(help(for: type)) }
    var arguments = Arguments(rest, command: type.name)
    let command = try type.init(&arguments)
    try arguments.finish()
    return .command(command)
  }

  /// argv as the kernel passed it (without the program name), as strings: an argument that is
  /// not valid UTF-8 is a usage error naming it, never repaired with U+FFFD (a pairing would be
  /// stored under a changed device ID).
  public static func arguments(_ raw: [[UInt8]]) throws(UsageError) -> [String] {
    var out: [String] = []
    for (index, bytes) in raw.enumerated() {
      guard let text = String(validating: bytes, as: UTF8.self) else {
        let which =
          index > 0 && out[index - 1].hasPrefix("-")
          ? "the value of \(out[index - 1].escapingControlCharacters)" : "argument \(index + 1)"
        throw UsageError("\(which) is not valid UTF-8 (\(shownBytes(bytes))); give it as UTF-8 text")
      }
      out.append(text)
    }
    return out
  }

  /// Bytes that are not all UTF-8, in quotes for a message: the valid characters as they are
  /// (control characters escaped), each bad byte as `\xFF`, at most 80 bytes.
  static func shownBytes(_ bytes: [UInt8]) -> String {
    var out = "\""
    var i = 0
    while i < min(bytes.count, 80) {
      var length = 0
      for n in 1...4 where i + n <= bytes.count {
        if String(validating: bytes[i..<(i + n)], as: UTF8.self) != nil {
          length = n
          break
        }
      }
      if length > 0 {
        let text = String(decoding: bytes[i..<(i + length)], as: UTF8.self)
        out += text == "\"" || text == "\\" ? "\\" + text : text.escapingControlCharacters
        i += length
      } else {
        let hex = String(bytes[i], radix: 16, uppercase: true)
        out += "\\x" + (hex.count == 1 ? "0" : "") + hex
        i += 1
      }
    }
    return out + (bytes.count > 80 ? "…\"" : "\"")
  }

  /// The process's own argv, read from `CommandLine.unsafeArgv` as bytes.
  public static func processArguments() -> [[UInt8]] {
    (1..<Int(CommandLine.argc)).map { index in
      guard let pointer = CommandLine.unsafeArgv[index] else { return [] }
      return Array(
        UnsafeBufferPointer(
          start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer)))
    }
  }

  /// Parses and runs argv given as bytes; returns the exit status.
  public static func main(raw: [[UInt8]], console: any Console = StandardConsole()) async -> Int32 {
    do {
      return await main(try arguments(raw), console: console)
    } catch {
      return usageFailure(error, console: console)
    }
  }

  static func usageFailure(_ error: UsageError, console: any Console) -> Int32 {
    console.err("beaconbridge: \(error.description)\n")
    console.err("Run 'beaconbridge --help' for usage.\n")
    return ExitStatus.usage
  }

  /// Parses and runs; returns the exit status.
  public static func main(_ argv: [String], console: any Console = StandardConsole()) async -> Int32 {
    do {
      switch try parse(argv) {
      case .help(let text):
        console.out(text)
        return ExitStatus.success
      case .version:
        console.out("beaconbridge \(version)\n")
        return ExitStatus.success
      case .command(let command):
        return await command.run(console)
      }
    } catch {
      return usageFailure(error, console: console)
    }
  }

  public static var mainHelp: String {
    var width = 0
    for command in commands { width = max(width, command.name.count) }
    var lines: [String] = []
    for command in commands {
      lines.append("  " + command.name.padding(toLength: width + 2) + command.abstract)
    }
    let list = lines.joined(separator: "\n")
    return """
      beaconbridge \(version): vehicle beacons for trip tagging on Linux (BlueZ).

      USAGE: beaconbridge <command> [options]

      COMMANDS:
      \(list)

      OPTIONS:
        --help       Show help (also after any command).
        --version    Show the version.

      Errors go to stderr; the exit status is 0 on success, 1 on failure, 64 on a usage error.

      """
  }

  public static func help(for command: any BridgeCommand.Type) -> String {
    "USAGE: \(command.usage)\n\n\(command.abstract)\n\n\(command.discussion)\n"
  }
}

extension String {
  func padding(toLength length: Int) -> String {
    count >= length ? self : self + String(repeating: " ", count: length - count)
  }
}
