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
    var listed: [JSONValue]
    do {
      listed = try await DaemonClient.json(BridgeServiceNames.Method.pairings).arrayValue ?? []
    } catch  where error.notRunning {
      guard let store = store.openExisting(console) else { return ExitStatus.failure }
      do { listed = try await store.pairingsWithSource() } catch {
        console.err("beaconbridge: \(error.description)\n")
        return ExitStatus.failure
      }
    } catch {
      console.err("beaconbridge: \(error.description)\n")
      return ExitStatus.failure
    }
    // Each pairing with where it came from (`fleet` or `local`, docs/fleet.md).
    let pairings: [(pairing: Pairing, source: String)] = listed.compactMap { item in
      let source = item["source"]?.stringValue == "fleet" ? "fleet" : "local"
      // A pairing by key: its number and scheme, never its key.
      if let number = item["pairing"]?.intValue, let deviceId = item["deviceId"]?.stringValue,
        let device = try? DeviceID(deviceId),
        let scheme = item["authentication"]?.stringValue == "eid"
          ? KeyedIdentity.Scheme.eid
          : item["authentication"]?.stringValue == "rpa" ? .rpa : nil
      {
        return (
          Pairing(
            key: KeyedIdentity(scheme: scheme, pairing: number), deviceId: device,
            label: item["label"]?.stringValue),
          source
        )
      }
      guard let text = item["uuid"]?.stringValue, let uuid = UUID(uuidString: text),
        let deviceId = item["deviceId"]?.stringValue
      else { return nil }
      let pairing = Pairing(
        uuid: uuid, major: item["major"]?.intValue.flatMap { UInt16(exactly: $0) },
        minor: item["minor"]?.intValue.flatMap { UInt16(exactly: $0) }, deviceId: deviceId,
        label: item["label"]?.stringValue)
      return (pairing, item["source"]?.stringValue == "fleet" ? "fleet" : "local")
    }
    if json {
      let items = pairings.map { entry -> JSONValue in
        var fields = entry.pairing.json.objectValue ?? [:]
        fields["source"] = .string(entry.source)
        return .object(fields)
      }
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
    for (p, source) in pairings {
      out +=
        p.deviceId.escapingControlCharacters.padding(toLength: 15) + " " + p.pattern.padding(toLength: 49)
        + " " + source.padding(toLength: 6) + " "
        + (p.label ?? "").escapingControlCharacters + "\n"
    }
    console.out(out)
    return ExitStatus.success
  }
}
