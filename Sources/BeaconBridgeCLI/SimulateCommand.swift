import BeaconCore
import BridgeDaemon
import Foundation

/// `beaconbridge simulate FILE`: a scenario in virtual time, one JSON object per line.
public struct SimulateCommand: BridgeCommand {
  public static let name = "simulate"
  public static let abstract = "Run a scenario file in virtual time; print one JSON object per line."
  public static let usage = "beaconbridge simulate FILE [--json]"
  public static let discussion = """
    FILE is a scenario (JSON; '-' reads stdin): optional "config" (settings by their camelCase
    names), "pairings" (by identity, or by key: {"eid": {"identityKey", "rotationExponent",
    "beaconClock"}, "deviceId"} or {"irk", "deviceId"}), and "events", each with "at" (seconds on a virtual clock from 0) and one
    of advertisement, lost, tripStart, tripEvents, tripEnd, tripAssign, pair, unpair.

    The scenario runs through the real pipeline (frames, presence, active beacon, trip tagging,
    the upload hand-off) as fast as it can. The same file always prints the same lines. Each line
    has "at" and "type": beaconEntered, beaconExited, activeBeaconChanged, tripStarted,
    tripTagged, batchHeld, batchPosted, tripEnded, and rejected for malformed advertisements or
    refused trip calls.

    Reads at most 16 MiB; event times are at most 1000000000 s (about 31
    years). A scenario file that cannot be read, is larger or is not a scenario exits 1 with one
    error naming the problem.

    OPTIONS:
      --json    Accepted for symmetry with other commands; output is always JSON lines.
    """

  public var file: String

  public init(_ arguments: inout Arguments) throws(UsageError) {
    _ = arguments.flag("--json")
    file = try arguments.positional("scenario FILE")
  }

  public func run(_ console: any Console) async -> Int32 {
    let bytes: [UInt8]
    do { bytes = try InputReader.read(file, limit: InputLimits.json) } catch {
      console.err("beaconbridge: simulate: \(error.description)\n")
      return ExitStatus.failure
    }
    let scenario: Scenario
    do {
      scenario = try Scenario.decode(Data(bytes))
    } catch {
      console.err("beaconbridge: scenario \(file): \(error)\n")
      return ExitStatus.failure
    }
    do {
      try await ScenarioRunner(scenario: scenario, authenticator: KeyAuthenticator.forScenario(scenario)).run(
        emit: { console.out($0.jsonLine + "\n") }, report: { console.out($0.jsonLine + "\n") })
    } catch {
      console.err("beaconbridge: scenario \(file): \(error)\n")
      return ExitStatus.failure
    }
    return ExitStatus.success
  }
}

/// The size caps of what the CLI reads. Each command's --help states its cap in words, and
/// IOBoundaryTests checks that the words match these.
public enum InputLimits {
  /// A scenario file (`simulate`) and a trip events batch (`trip events`).
  public static let json = 16 << 20
  /// A btsnoop capture (`replay`).
  public static let capture = 32 << 20
}
