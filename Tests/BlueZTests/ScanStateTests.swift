import DBus
import Testing

@testable import BlueZ

/// The one state that replaced the scan's four flags.
struct ScanStateTests {
  static let hci0: ObjectPath = "/org/bluez/hci0"

  @Test func onlyARunningScanHasAnAdapter() {
    #expect(ScanState.idle.adapter == nil)
    #expect(ScanState.requested(Self.hci0).adapter == nil)
    #expect(ScanState.discovering(Self.hci0).adapter == Self.hci0)
    #expect(ScanState.monitoring(Self.hci0).adapter == Self.hci0)
  }

  @Test func theEndStopsWhatMayRun() {
    #expect(ScanState.requested(Self.hci0).discoveryToStop == Self.hci0)
    #expect(ScanState.discovering(Self.hci0).discoveryToStop == Self.hci0)
    #expect(ScanState.monitoring(Self.hci0).discoveryToStop == nil)
    #expect(ScanState.monitoring(Self.hci0).monitorAdapter == Self.hci0)
    #expect(ScanState.discovering(Self.hci0).monitorAdapter == nil)
  }

  @Test func stoppingKeepsAnUnansweredRequest() {
    for running in [ScanState.discovering(Self.hci0), .monitoring(Self.hci0), .idle] {
      var state = running
      state.stop()
      #expect(state == .idle, "\(running)")
    }
    var requested = ScanState.requested(Self.hci0)
    requested.stop()
    #expect(requested == .requested(Self.hci0))
  }
}
