import BeaconCore
import BridgeDaemon
import Foundation
import GZone

/// `beaconbridge gzone status|diff|refresh`: G-Zone game state from payload folders, and the
/// daemon's poller on demand.
public struct GZoneCommand: BridgeCommand {
  public static let name = "gzone"
  public static let abstract =
    "G-Zone game state from a payload folder, the events between two, or refresh the daemon."
  public static let usage = """
    beaconbridge gzone status DIR [--json]
           beaconbridge gzone diff OLD_DIR NEW_DIR [--json]
           beaconbridge gzone refresh [--json]
    """
  public static let discussion = """
    A payload folder holds experience-levels.json, player.json, available-games.json and
    game-rounds.json, each the raw JSON of its G-Zone request (docs/DESIGN.md, Contracts).

      status    The derived state: available games, rounds in progress and completed, the
                rewards of completed rounds, currency, the level with the next one and the
                progress between them (docs/gzone.md has the rules).
      diff      The events from OLD_DIR to NEW_DIR: roundStarted, roundCompleted, rewardEarned,
                levelUp, levelDown, currencyChanged, gameAvailable, gameWithdrawn.
      refresh   Asks the running daemon to reload the G-Zone payloads now; prints the events
                that load produced. Exits 1 when the daemon has no [GZone] configuration.

    OPTIONS:
      --json    status: one JSON object; diff and refresh: one JSON object per event, each with
                "type".

    A payload that is missing, larger than 16 MiB, not JSON or of the wrong shape is an error
    naming the file; exit 1. JSON output is always
    valid JSON: a derived number that overflows (no finite value) prints as null.
    """

  enum Action: String, Sendable { case status, diff, refresh }

  var action: Action
  var directories: [String] = []
  var json: Bool

  public init(_ arguments: inout Arguments) throws(UsageError) {
    let word = try arguments.positional("action (status, diff or refresh)")
    guard let action = Action(rawValue: word) else {
      throw UsageError("unknown gzone action '\(word)' (status, diff or refresh)")
    }
    self.action = action
    json = arguments.flag("--json")
    switch action {
    case .status: directories = [try arguments.positional("payload folder DIR")]
    case .diff:
      directories = [try arguments.positional("OLD_DIR"), try arguments.positional("NEW_DIR")]
    case .refresh: break
    }
  }

  public func run(_ console: any Console) async -> Int32 {
    do throws(GZoneError) {
      switch action {
      case .status:
        let state = GZoneState(try await DirectoryGZoneSource(directory: directories[0]).load())
        // Text mode escapes control and bidi characters in payload values; JSON keeps the bytes.
        console.out(json ? state.jsonText + "\n" : Self.text(state).escapingControlCharactersExceptNewlines)
      case .diff:
        let old = try await DirectoryGZoneSource(directory: directories[0]).load()
        let new = try await DirectoryGZoneSource(directory: directories[1]).load()
        let events = GZoneDiff.events(from: old, to: new)
        if json {
          console.out(events.map { $0.jsonText + "\n" }.joined())
        } else {
          console.out(
            events.isEmpty
              ? "No changes.\n"
              : events.map { $0.summary + "\n" }.joined().escapingControlCharactersExceptNewlines)
        }
      case .refresh:
        return await refresh(console)
      }
    } catch {
      console.err("beaconbridge: \(error.description)\n")
      return ExitStatus.failure
    }
    return ExitStatus.success
  }

  func refresh(_ console: any Console) async -> Int32 {
    let reply: JSONValue
    do { reply = try await DaemonClient.json(BridgeServiceNames.Method.gzoneRefresh) } catch {
      console.err("beaconbridge: gzone refresh: \(error.description)\n")
      return ExitStatus.failure
    }
    // Each event as `gzone diff` prints it; one this CLI does not know stays as it came.
    let items = reply["events"]?.arrayValue ?? []
    if items.isEmpty && !json {
      console.out(
        reply["baseline"] == .bool(true) ? "Loaded (the first load: no events).\n" : "No changes.\n")
    }
    for item in items {
      let event = GZoneEvent(json: item)
      console.out(
        (json ? event?.jsonText : event?.summary.escapingControlCharactersExceptNewlines) ?? item.compactText)
      console.out("\n")
    }
    return ExitStatus.success
  }

  static func text(_ state: GZoneState) -> String {
    func percent(_ p: Double?) -> String { p.map { "\(Int(($0 * 100).rounded()))%" } ?? "-" }
    func range(_ level: GZoneLevel) -> String {
      "\(level.name) (\(level.startText)–\(level.endText))"
    }
    var out = "Experience:   \(state.experienceText)\n"
    switch (state.level, state.nextLevel) {
    case (let level?, let next?):
      out += "Level:        \(range(level)), \(percent(state.progress)) → \(next.name)\n"
    case (let level?, nil): out += "Level:        \(range(level)), \(percent(state.progress)) (highest)\n"
    case (nil, let next?): out += "Level:        none yet; next \(range(next))\n"
    case (nil, nil): out += "Level:        none (no levels defined)\n"
    }
    out += "Currency:     \(state.currency.stringValue ?? state.currency.compactText)\n"
    func list(_ label: String, _ items: [JSONValue], key: (JSONValue) -> String) {
      out += label.padding(toLength: 14) + "\(items.count)\n"
      for item in items { out += "  \(GZoneEvent.title(item, key: key(item)))\n" }
    }
    list("Available:", state.available, key: GZoneIdentity.gameKey(_:))
    list("In progress:", state.inProgress, key: GZoneIdentity.roundKey(_:))
    list("Completed:", state.completed, key: GZoneIdentity.roundKey(_:))
    list("Rewards:", state.rewards, key: { _ in "" })
    return out
  }
}
