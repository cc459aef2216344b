import DBus
import Testing

@testable import BlueZ

/// BlueZ's error replies become `BlueZError` in one place; every other D-Bus error stays one.
struct BlueZErrorTests {
  @Test func mapsBlueZsErrorNames() throws {
    let busy = try #require(
      BlueZError(DBusError("org.bluez.Error.InProgress", "Operation already in progress")))
    #expect(busy.code == .inProgress)
    #expect(busy.message == "Operation already in progress")
    #expect(busy.description == "org.bluez.Error.InProgress: Operation already in progress")
    #expect(BlueZError(DBusError("org.bluez.Error.NotReady", ""))?.code == .notReady)
    #expect(BlueZError(DBusError("org.bluez.Error.DoesNotExist", "gone"))?.code == .doesNotExist)

    // A BlueZ name without a constant keeps its name.
    let other = try #require(BlueZError(DBusError("org.bluez.Error.AlreadyExists", "x")))
    #expect(other.code.errorName == "org.bluez.Error.AlreadyExists")
    #expect(other.code != .failed)

    // The bus's and its policy's errors are not BlueZ's.
    #expect(BlueZError(DBusError(.accessDenied, "denied")) == nil)
    #expect(BlueZError(DBusError(.noReply, "timeout")) == nil)
  }

  @Test func ourOwnCodesCarryNoDBusName() {
    let error = BlueZError(.noAdapter, "BlueZ has no Bluetooth adapter")
    #expect(error.code.errorName == nil)
    #expect(error.description == "BlueZ has no Bluetooth adapter")
  }

  @Test func mappingRethrowsOnlyBlueZsErrors() async {
    await #expect(throws: BlueZError.self) {
      try await BlueZError.mapping { () async throws -> Int in throw DBusError("org.bluez.Error.Failed", "no")
      }
    }
    await #expect(throws: DBusError(.accessDenied, "denied")) {
      try await BlueZError.mapping { () async throws -> Int in throw DBusError(.accessDenied, "denied") }
    }
  }
}
