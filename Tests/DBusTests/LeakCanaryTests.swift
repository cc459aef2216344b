import CDBus
import Foundation
import Testing

/// scripts/leakcheck.sh --selftest sets BEACONBRIDGE_LEAK_CANARY=1 to prove that a leaked
/// `DBusMessage` is caught. Without it this test frees what it allocates.
@Suite struct LeakCanaryTests {
  @Test func canaryMessage() throws {
    let message = try #require(dbus_message_new_signal("/canary", "org.example.Canary", "Leak"))
    if ProcessInfo.processInfo.environment["BEACONBRIDGE_LEAK_CANARY"] != "1" {
      dbus_message_unref(message)
    }
  }
}
