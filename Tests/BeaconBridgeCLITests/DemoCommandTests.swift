import BeaconBridgeCLI
import Testing

@Suite struct DemoCommandTests {
  @Test func demoTagsBothTripsWithTheInVehicleBeacon() async {
    let console = CapturingConsole()
    let status = await CLI.main(["demo", "--speed", "10000"], console: console)
    #expect(status == 0)
    let out = console.stdout
    #expect(out.contains("trip tagged      t1 -> UNIT-0042 (activeAtStart)"))
    #expect(out.contains("trip tagged      t2 -> UNIT-0042 (lateArrival)"))
    #expect(out.contains("batch held       t2 #0"))
    #expect(!out.contains("UNIT-0099 (van 9)"), "the passing van must never be active")
    #expect(out.contains("5 batches posted, 9 events, none lost."))
  }

  @Test func liveTableOnATerminal() async {
    let console = CapturingConsole(isTerminal: true)
    #expect(await CLI.main(["demo", "--speed", "10000"], console: console) == 0)
    #expect(console.stdout.contains("BEACONS IN RANGE"))
    #expect(console.stdout.contains("\u{1B}[H"))
    #expect(console.stdout.contains("ACTIVE BEACON: UNIT-0042 (van 7)"))
  }
}
