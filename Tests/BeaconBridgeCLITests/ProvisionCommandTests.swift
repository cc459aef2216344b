import BeaconCore
import DBus
import Foundation
import Testing

@testable import BeaconBridgeCLI

/// `provision`'s arguments, each refused with a sentence naming the option, and BlueZ's GATT
/// errors told apart as the provisioner needs them. The exchange itself: EIDProvisioningTests
/// (a fake beacon) and ProvisionEndToEndTests (bluetoothd's stand-in).
@Suite struct ProvisionCommandTests {
  static let base = [
    "provision", "--address", "AA:BB:CC:DD:EE:FF", "--lock-key-file", "k", "--rotation-exponent", "10",
    "--device-id", "VAN-7",
  ]

  func refusal(_ argv: [String]) -> String? {
    do {
      _ = try CLI.parse(argv)
      return nil
    } catch { return error.description }
  }

  @Test func aCompleteCommandParses() throws {
    guard
      case .command(let command) = try CLI.parse(
        Self.base + ["--label", "van 7", "--adapter", "hci1", "--json"])
    else { throw Missing() }
    let provision = try #require(command as? ProvisionCommand)
    #expect(provision.address.description == "AA:BB:CC:DD:EE:FF")
    #expect(provision.rotationExponent == 10)
    #expect(provision.adapter?.name == "hci1")
    #expect(provision.pairing.deviceId == "VAN-7" && provision.pairing.label == "van 7")
    #expect(provision.sharedKeyFile == nil)
  }
  struct Missing: Error {}

  @Test(arguments: [
    (["--address"], "provision needs --address"),
    (["--lock-key-file"], "provision needs --lock-key-file"),
    (["--rotation-exponent"], "provision needs --rotation-exponent"),
    (["--device-id"], "provision needs --device-id"),
  ])
  func eachRequiredOptionIsNamedWhenMissing(_ left: [String], _ sentence: String) {
    var argv = Self.base
    let i = argv.firstIndex(of: left[0])!
    argv.removeSubrange(i...(i + 1))
    #expect(refusal(argv)?.contains(sentence) == true, "\(refusal(argv) ?? "parsed")")
  }

  @Test(arguments: [
    ("--address", "AA:BB:CC:DD:EE", "--address must be a Bluetooth address"),
    ("--address", "AA-BB-CC-DD-EE-FG", "--address must be a Bluetooth address"),
    ("--rotation-exponent", "16", "--rotation-exponent"),
    ("--rotation-exponent", "2.5", "whole number from 0 to 15"),
    ("--device-id", " X", "--device-id"),
  ])
  func aBadValueIsRefusedByName(_ option: String, _ value: String, _ sentence: String) {
    var argv = Self.base
    argv[argv.firstIndex(of: option)! + 1] = value
    #expect(refusal(argv)?.contains(sentence) == true, "\(refusal(argv) ?? "parsed")")
  }

  @Test func theSharedKeyMethodNeedsItsLessSecureFlagAndTheFlagNeedsIt() throws {
    #expect(refusal(Self.base + ["--shared-key-file", "s"])?.contains("less secure") == true)
    #expect(
      refusal(Self.base + ["--less-secure-shared-key"])?.contains("goes with --shared-key-file") == true)
    guard
      case .command(let command) = try CLI.parse(
        Self.base + ["--shared-key-file", "s", "--less-secure-shared-key"])
    else { throw Missing() }
    #expect((command as? ProvisionCommand)?.sharedKeyFile == "s")
  }

  @Test func blueZErrorsAreToldApart() {
    let cases: [(DBusError, String)] = [
      (
        DBusError(ErrorName("org.bluez.Error.NotPermitted"), "Read not permitted"),
        "Read Not Permitted (ATT 0x02)"
      ),
      (
        DBusError(ErrorName("org.bluez.Error.NotPermitted"), "Write not permitted"),
        "Write Not Permitted (ATT 0x03)"
      ),
      (
        DBusError(ErrorName("org.bluez.Error.InvalidValueLength"), "Invalid Length"),
        "Invalid Attribute Length (ATT 0x0D)"
      ),
      (
        DBusError(ErrorName("org.bluez.Error.Failed"), "Operation failed with ATT error: 0x0d"),
        "Invalid Attribute Length (ATT 0x0D)"
      ),
      (
        DBusError(ErrorName("org.bluez.Error.Failed"), "Operation failed with ATT error: 0x80"),
        "ATT error 0x80"
      ),
      (
        DBusError(ErrorName("org.bluez.Error.InvalidArguments"), "Invalid Length"),
        "Invalid Attribute Length (ATT 0x0D)"
      ),
      (
        DBusError(ErrorName("org.bluez.Error.NotPermitted"), "Not paired"),
        "Not paired (org.bluez.Error.NotPermitted)"
      ),
      (DBusError(ErrorName("org.bluez.Error.Failed"), "Not connected"), "the beacon disconnected"),
      (DBusError(.noReply, "Did not receive a reply"), "no answer in time"),
    ]
    for (error, expected) in cases {
      #expect(BlueZGATTTransport.gattError(error).description == expected, "\(error)")
    }
  }
}
