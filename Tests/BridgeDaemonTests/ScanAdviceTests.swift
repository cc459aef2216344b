import BlueZ
import BridgeDaemon
import DBus
import Testing

/// The one wording of scan failures, for the command line and the service.
struct ScanAdviceTests {
  @Test func blueZErrorsAreExplainedAsBlueZs() throws {
    #expect(
      ScanAdvice.explain(BlueZError(.bluezUnavailable, "x")).contains("--backend hci"))
    #expect(
      ScanAdvice.explain(BlueZError(.bluezUnavailable, "x"), for: .service).contains("backend = hci"))
    #expect(ScanAdvice.explain(BlueZError(.adapterNotFound, "no adapter hci3")).hasSuffix("'btmgmt info'"))
    // A BlueZ error reply is BlueZ's, not a bus that cannot be reached.
    let failed = try #require(BlueZError(DBusError("org.bluez.Error.Failed", "Operation failed")))
    #expect(ScanAdvice.explain(failed) == "bluez: org.bluez.Error.Failed: Operation failed")
  }

  @Test func busErrorsStayTheBuss() {
    let denied = DBusError(.accessDenied, "Rejected send message")
    #expect(ScanAdvice.explain(denied).contains("bluetooth group"))
    #expect(ScanAdvice.explain(denied, for: .service).contains("SupplementaryGroups=bluetooth"))
    #expect(ScanAdvice.explain(DBusError(.noServer, "no socket")).contains("Is dbus running?"))
  }
}
