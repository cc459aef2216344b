import BeaconCore
import BridgeDaemon

/// `beaconbridge unpair`: removes the pairings of a device ID.
public struct UnpairCommand: BridgeCommand {
  public static let name = "unpair"
  public static let abstract = "Remove the pairings of a device ID."
  public static let usage = "beaconbridge unpair --device-id ID [--state-dir DIR] [--json]"
  public static let discussion = """
    Exits 1 when no pairing has that device ID, or when [Fleet] is configured (the fleet's
    desired document owns the pairings, docs/fleet.md).

    OPTIONS:
      --device-id ID   The device ID to unpair.
    \(StoreOptions.help)
      --json           Print {"deviceId": ..., "removed": N}.
    """

  public var deviceId: DeviceID
  var store: StoreOptions
  var json: Bool

  public init(_ arguments: inout Arguments) throws(UsageError) {
    json = arguments.flag("--json")
    store = try StoreOptions(&arguments)
    guard let id = try arguments.option("--device-id", as: DeviceID.self) else {
      throw UsageError("unpair needs --device-id")
    }
    deviceId = id
  }

  public func run(_ console: any Console) async -> Int32 {
    var removed: Int
    do {
      removed = Int(
        try await DaemonClient.call(BridgeServiceNames.Method.unpair, [.string(deviceId.rawValue)]).first?
          .uint32 ?? 0)
    } catch  where error.notRunning {
      guard let count = await store.write(console, { try await $0.unpair(deviceId: deviceId) }) else {
        return ExitStatus.failure
      }
      removed = count
    } catch {
      console.err("beaconbridge: \(error.description)\n")
      return ExitStatus.failure
    }
    if json {
      console.out(
        JSONValue.object(["deviceId": .string(deviceId.rawValue), "removed": .int(Int64(removed))])
          .compactText + "\n")
    } else if removed > 0 {
      console.out("Unpaired \(deviceId) (\(removed) pairing\(removed == 1 ? "" : "s")).\n")
    }
    guard removed > 0 else {
      console.err("beaconbridge: no pairing has device ID \(deviceId); 'beaconbridge pairs' lists them\n")
      return ExitStatus.failure
    }
    return ExitStatus.success
  }
}
