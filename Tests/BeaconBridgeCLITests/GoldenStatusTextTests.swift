import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconBridgeCLI
@testable import BeaconCore
@testable import BridgeDaemon

/// `status`'s text, made from the golden `Status` reply (Tests/Golden/daemon/status.json, which
/// BridgeDaemonTests keeps equal to what the daemon sends) and from the documented one
/// (Tests/Fixtures/status/status.json; status-set-aside.json, a fleet document set aside), against
/// Tests/Golden/cli.
@Suite struct GoldenStatusTextTests {
  @Test(arguments: [
    ("Golden/daemon/status.json", "status-daemon.txt"),
    ("Fixtures/status/status.json", "status-documented.txt"),
    // A box started without [Fleet] after a desired document was applied: it is set aside.
    ("Fixtures/status/status-set-aside.json", "status-set-aside.txt"),
  ])
  func theStatusText(_ input: String, _ golden: String) throws {
    let url = Golden.directory().deletingLastPathComponent().appendingPathComponent(input)
    let document = try StatusDocument(json: try JSONValue.parse(try Data(contentsOf: url)))
    let mismatch = Golden.mismatch(StatusCommand.text(document), folder: "cli", name: golden)
    #expect(mismatch == nil, "\(mismatch ?? "")")
  }
}
