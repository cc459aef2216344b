import BeaconCore
import BridgeDaemon
import Foundation

/// `beaconbridge pairs`: lists pairings.
public struct PairsCommand: BridgeCommand {
  public static let name = "pairs"
  public static let abstract = "List pairings."
  public static let usage = "beaconbridge pairs [--state-dir DIR] [--json]"
  public static let discussion = """
    Asks the daemon when it runs; else reads the store in the state directory, read-only (a
    read-only directory is read too), and creates nothing: a missing state directory or store
    is "not found" (exit 1).
    Each pairing's SOURCE is fleet (from the fleet's desired document, docs/fleet.md) or local
    (paired on this box).

    OPTIONS:
    \(StoreOptions.help)
      --json           Print a JSON array of {uuid, major, minor, deviceId, label, source}.
    """

  var store: StoreOptions
  var json: Bool

  public init(_ arguments: inout Arguments) throws(UsageError) {
    json = arguments.flag("--json")
    store = try StoreOptions(&arguments)
  }

  public func run(_ console: any Console) async -> Int32 {
    // Each pairing with where it came from (`fleet` or `local`, docs/fleet.md).
    var pairings: [ReportedPairing]
    do {
      pairings = try Self.read(try await DaemonClient.json(BridgeServiceNames.Method.pairings))
    } catch  where error.notRunning {
      guard let store = store.openExisting(console) else { return ExitStatus.failure }
      do { pairings = try await store.pairingsWithSource() } catch {
        console.err("beaconbridge: \(error.description)\n")
        return ExitStatus.failure
      }
    } catch {
      console.err("beaconbridge: \(error.description)\n")
      return ExitStatus.failure
    }
    if json {
      let items = pairings.map { ReportedPairing($0.pairing, source: $0.source ?? .local).json }
      console.out(JSONValue.array(items).compactText + "\n")
      return ExitStatus.success
    }
    guard !pairings.isEmpty else {
      console.out(
        "No pairings. Pair a beacon with 'beaconbridge pair --uuid U --major M --minor N --device-id ID'.\n")
      return ExitStatus.success
    }
    var out =
      "DEVICE ID".padding(toLength: 16) + "BEACON".padding(toLength: 50) + "SOURCE".padding(toLength: 7)
      + "LABEL\n"
    for entry in pairings {
      let p = entry.pairing
      out +=
        p.deviceId.rawValue.escapingControlCharacters.padding(toLength: 15) + " "
        + p.pattern.padding(toLength: 49)
        + " " + (entry.source ?? .local).rawValue.padding(toLength: 6) + " "
        + (p.label ?? "").escapingControlCharacters + "\n"
    }
    console.out(out)
    return ExitStatus.success
  }

  /// The daemon's `Pairings` reply, each pairing read by `ReportedPairing`: one that does not
  /// read is a sentence naming where, since the daemon then runs another version.
  static func read(_ reply: JSONValue) throws(DaemonClient.Failure) -> [ReportedPairing] {
    guard case .array(let items) = reply else {
      throw DaemonClient.Failure(
        description: "the daemon's Pairings reply is not a list: \(Self.otherVersion)")
    }
    var out: [ReportedPairing] = []
    for (index, item) in items.enumerated() {
      do { out.append(try ReportedPairing(json: item, path: "[\(index)]")) } catch {
        throw DaemonClient.Failure(
          description:
            "the daemon's Pairings reply \(StatusDocumentError(error).problemText): \(Self.otherVersion)")
      }
    }
    return out
  }

  static let otherVersion =
    "the running daemon is another version than this beaconbridge (restart it after an upgrade: systemctl restart beaconbridge)"
}
