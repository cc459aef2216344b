import BeaconCore
import BeaconTestSupport
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The fleet's state lives and dies with `[Fleet]` (docs/fleet.md "Without [Fleet]"): without
/// it, nothing of the applied document applies (its settings and its pairings are set aside) and
/// `status` says so; with `[Fleet]` back, the broker's retained document is applied again for
/// real before it is answered `applied`. Real daemon, real Mosquitto.
@Suite(.tags(.process), .serialized, .timeLimit(.minutes(3)))
struct FleetSetAsideTests {
  let cli = DaemonEndToEndTests()

  @Test func withoutFleetNothingOfTheDocumentAppliesAndWithItBackItIsAppliedAgain() async throws {
    let box = try FleetDesiredTests.Box("aside")
    let desired = "fleet/aside/config/desired"
    try await box.broker.publish(
      desired, FleetDesiredTests.document(4, [(7, "VAN-7")], settings: #"{"Trips":{"maxOpenTrips":1}}"#))
    try await box.start()
    try await waitUntil("v4 applied: \(box.answers)\n\(box.daemon!.log)") { box.answers == ["applied@4"] }
    #expect(try await box.pairs() == ["VAN-7/fleet"])
    // maxOpenTrips = 1 rules: a second open trip is refused.
    #expect(
      try await cli.cli(["trip", "start", "--trip-id", "a1"], bus: box.bus.address, dir: box.dir).status == 0)
    #expect(
      try await cli.cli(["trip", "start", "--trip-id", "a2"], bus: box.bus.address, dir: box.dir).status != 0)
    #expect(
      try await cli.cli(["trip", "end", "--trip-id", "a1"], bus: box.bus.address, dir: box.dir).status == 0)
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")

    // [Fleet] removed: the document's settings and pairings are set aside, and status says so.
    let withFleet = try String(contentsOfFile: box.config, encoding: .utf8)
    let withoutFleet = String(withFleet[..<withFleet.range(of: "[Fleet]")!.lowerBound])
    try withoutFleet.write(toFile: box.config, atomically: true, encoding: .utf8)
    try await box.start()
    #expect(box.daemon!.log.contains("desired version 4 is set aside"), "\(box.daemon!.log)")
    #expect(try await box.pairs() == [])
    let status = try await cli.cli(["status", "--json"], bus: box.bus.address, dir: box.dir)
    let json = try JSONValue.parse(Data(status.stdout.utf8))
    #expect(json["fleetSetAside"]?.intValue == 4, "\(status.stdout)")
    #expect(json["fleet"] == nil)
    let text = try await cli.cli(["status"], bus: box.bus.address, dir: box.dir).stdout
    #expect(text.contains("desired version 4 set aside: [Fleet] is not configured"), "\(text)")
    // maxOpenTrips = 1 no longer rules: the file's default does.
    #expect(
      try await cli.cli(["trip", "start", "--trip-id", "b1"], bus: box.bus.address, dir: box.dir).status == 0)
    let second = try await cli.cli(["trip", "start", "--trip-id", "b2"], bus: box.bus.address, dir: box.dir)
    #expect(second.status == 0, "\(second.stderr)")
    for trip in ["b1", "b2"] {
      #expect(
        try await cli.cli(["trip", "end", "--trip-id", trip], bus: box.bus.address, dir: box.dir).status == 0)
    }
    // The box is paired locally meanwhile.
    let paired = try await cli.cli(
      ["pair", "--uuid", FleetDesiredTests.uuid, "--major", "1", "--minor", "20", "--device-id", "LOCAL-20"],
      bus: box.bus.address, dir: box.dir)
    #expect(paired.status == 0, "\(paired.stderr)")
    #expect(try await box.pairs() == ["LOCAL-20/local"])
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")

    // [Fleet] back: the retained document (the same version 4) is applied for real, replacing
    // the local pairing, before it is answered applied.
    try withFleet.write(toFile: box.config, atomically: true, encoding: .utf8)
    try await box.start()
    try await waitUntil("v4 applied again: \(box.answers)\n\(box.daemon!.log)") {
      box.answers == ["applied@4", "applied@4"]
    }
    #expect(box.daemon!.log.contains("desired version 4 applied"), "\(box.daemon!.log)")
    #expect(try await box.pairs() == ["VAN-7/fleet"])
    let back = try JSONValue.parse(
      Data(try await cli.cli(["status", "--json"], bus: box.bus.address, dir: box.dir).stdout.utf8))
    #expect(back["fleetSetAside"] == nil)
    #expect(back["fleet"]?["appliedVersion"]?.intValue == 4)
    #expect(
      try await cli.cli(["trip", "start", "--trip-id", "c1"], bus: box.bus.address, dir: box.dir).status == 0)
    #expect(
      try await cli.cli(["trip", "start", "--trip-id", "c2"], bus: box.bus.address, dir: box.dir).status != 0)
    #expect(await box.daemon!.stop(), "\(box.daemon!.log)")
  }
}
