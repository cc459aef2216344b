import BeaconBridgeCLI
import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

/// `pair`, `pairs` and `unpair` without a daemon, on a real store in a temporary directory.
@Suite struct PairingCommandTests {
  let uuid = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"

  func run(_ argv: [String]) async -> (Int32, String, String) {
    let console = CapturingConsole()
    let status = await CLI.main(argv, console: console)
    return (status, console.stdout, console.stderr)
  }

  @Test func pairListUnpairRoundTrip() async throws {
    let dir = scratchPath("cli")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let paired = await run([
      "pair", "--uuid", uuid, "--major", "1", "--minor", "7", "--device-id", "UNIT-0042", "--label", "van 7",
      "--state-dir", dir,
    ])
    #expect(paired.0 == 0)
    #expect(paired.1.contains("Paired \(uuid) 1/7 with UNIT-0042 (van 7)"))
    let listed = await run(["pairs", "--json", "--state-dir", dir])
    #expect(listed.0 == 0)
    let array = try JSONValue.parse(Data(listed.1.utf8)).arrayValue ?? []
    #expect(array.count == 1)
    #expect(array.first?["deviceId"]?.stringValue == "UNIT-0042")
    #expect(array.first?["minor"]?.intValue == 7)
    #expect(array.first?["source"]?.stringValue == "local")
    let table = await run(["pairs", "--state-dir", dir]).1
    #expect(table.hasPrefix("DEVICE ID       BEACON"), "\(table)")
    #expect(table.contains("SOURCE") && table.contains(" local  van 7\n"), "\(table)")
    let missing = await run(["unpair", "--device-id", "NOPE", "--state-dir", dir])
    #expect(missing.0 == 1)
    #expect(missing.2.contains("no pairing has device ID NOPE"))
    let unpaired = await run(["unpair", "--device-id", "UNIT-0042", "--json", "--state-dir", dir])
    #expect(unpaired.0 == 0)
    #expect(try JSONValue.parse(Data(unpaired.1.utf8))["removed"]?.intValue == 1)
    #expect(await run(["pairs", "--json", "--state-dir", dir]).1 == "[]\n")
  }

  @Test(arguments: [
    (["pair", "--device-id", "X"], "pair needs --uuid"),
    (["pair", "--uuid", "nope", "--device-id", "X"], "is not a UUID"),
    (["pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"], "pair needs --device-id"),
    (
      ["pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--major", "70000", "--device-id", "X"],
      "--major: major \"70000\" must be a whole number from 0 to 65535"
    ),
    (
      ["pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--minor", "1", "--device-id", "X"],
      "--minor: minor \"1\" needs a major"
    ),
    (
      ["pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--device-id", ""],
      "--device-id needs a value, not an empty string"
    ),
    (["unpair"], "unpair needs --device-id"),
    (["pairs", "extra"], "unexpected argument"),
  ])
  func usageErrors(argv: [String], message: String) async {
    let (status, out, err) = await run(argv)
    #expect(status == 64)
    #expect(out.isEmpty)
    #expect(err.contains(message), "stderr: \(err)")
  }
}
