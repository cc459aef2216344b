import BeaconCore
import DBus
import Foundation
import Testing

@testable import BridgeDaemon

/// The checks on the arguments of Bridge1's methods (`BridgeRequest.parse`): what each method
/// accepts, as typed values, and the sentence of each refusal (InvalidArgs), as a caller reads it.
/// Fuzz/bridge-methods fuzzes the same function.
@Suite struct BridgeRequestTests {
  typealias Name = BridgeServiceNames.Method
  static let uuid = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"
  static let key = "00112233445566778899AABBCCDDEEFF"

  static func parse(_ member: MemberName, _ values: [DBusValue]) -> Result<BridgeRequest, DBusError> {
    BridgeRequest.parse(member: member, values)
  }

  /// The refusal's sentence; nil when the call was accepted or refused as anything but InvalidArgs.
  static func refusal(_ member: MemberName, _ values: [DBusValue]) -> String? {
    guard case .failure(let error) = parse(member, values), error.name == .invalidArgs else { return nil }
    return error.message
  }

  static func accepted(_ member: MemberName, _ values: [DBusValue]) -> BridgeRequest? {
    try? parse(member, values).get()
  }

  static func keyed(
    _ scheme: String = "eid", key: String = key, k: Int32 = 10, clock: Int64 = 1_700_000_000,
    device: String = "front-door", label: String = ""
  ) -> [DBusValue] {
    [.string(scheme), .string(key), .int32(k), .int64(clock), .string(device), .string(label)]
  }

  @Test func methodsWithoutArgumentsIgnoreAnySent() {
    for (member, request) in [
      (Name.status, BridgeRequest.status), (Name.pairings, .pairings), (Name.recentLogs, .recentLogs),
      (Name.gzoneRefresh, .gzoneRefresh),
    ] {
      #expect(Self.accepted(member, []) == request)
      #expect(Self.accepted(member, [.string("extra"), .int32(1)]) == request)
    }
  }

  @Test func aMemberBridge1DoesNotHaveIsUnknown() throws {
    guard case .failure(let error) = Self.parse("Frobnicate", [.string("x")]) else {
      Issue.record("accepted")
      return
    }
    #expect(error.name == .unknownMethod)
    #expect(error.message == "org.beaconbridge.Bridge1 has no method \"Frobnicate\"")
    for member in Name.all {
      if case .failure(let error) = Self.parse(member, []) { #expect(error.name == .invalidArgs) }
    }
  }

  @Test func pairAcceptsAnIdentityWithAnyMinorAndALabel() throws {
    let identity = try PairingIdentity(uuid: #require(UUID(uuidString: Self.uuid)), major: 1, minor: nil)
    #expect(
      Self.accepted(
        Name.pair, [.string(Self.uuid), .int32(1), .int32(-1), .string("van-7"), .string("Van 7")])
        == .pair(Pairing(identity: identity, deviceId: "van-7", label: "Van 7")))
    // An empty label is none; the label may be left out, and a variant holding a string is one.
    let unlabelled = BridgeRequest.pair(Pairing(identity: identity, deviceId: "van-7"))
    #expect(
      Self.accepted(Name.pair, [.string(Self.uuid), .int32(1), .int32(-1), .string("van-7"), .string("")])
        == unlabelled)
    #expect(
      Self.accepted(Name.pair, [.variant(.string(Self.uuid)), .int32(1), .int32(-1), .string("van-7")])
        == unlabelled)
  }

  @Test func pairRefusals() {
    let signature = "Pair takes (s uuid, i major, i minor, s deviceId, s label); -1 = any"
    #expect(Self.refusal(Name.pair, []) == signature)
    #expect(
      Self.refusal(Name.pair, [.string(Self.uuid), .string("1"), .int32(2), .string("van-7")]) == signature)
    #expect(
      Self.refusal(Name.pair, [.string("not-a-uuid"), .int32(1), .int32(2), .string("van-7")])
        == "UUID \"not-a-uuid\" is not a UUID like E2C56DB5-DFFB-48D2-B060-D0F5A71096E0")
    #expect(
      Self.refusal(Name.pair, [.string(Self.uuid), .int32(70_000), .int32(2), .string("van-7")])
        == "major \"70000\" must be a whole number from 0 to 65535")
    #expect(
      Self.refusal(Name.pair, [.string(Self.uuid), .int32(-1), .int32(2), .string("van-7")])
        == "minor \"2\" needs a major (a wildcard major with a fixed minor is ambiguous)")
    #expect(
      Self.refusal(Name.pair, [.string(Self.uuid), .int32(1), .int32(2), .string(" van-7")])
        == "device ID \" van-7\" starts or ends with a space; a device ID is 1 to 128 bytes of printable "
        + "text, not starting or ending with a space")
    #expect(
      Self.refusal(
        Name.pair, [.string(Self.uuid), .int32(1), .int32(2), .string("van-7"), .string("Van 7 ")])
        == "label \"Van 7 \" starts or ends with a space; a label is 1 to 128 bytes of printable text, "
        + "not starting or ending with a space")
  }

  @Test func pairWithKeyAcceptsEIDAndRPAKeysInEitherCase() throws {
    guard case .pairWithKey(let eid) = Self.accepted(Name.pairWithKey, Self.keyed(label: "Front door")) else {
      Issue.record("refused: \(Self.refusal(Name.pairWithKey, Self.keyed()) ?? "")")
      return
    }
    #expect(eid.scheme == .eid)
    #expect(eid.key.bytes == Array(Self.key.lowercased().utf8))
    #expect(eid.rotationExponent == 10 && eid.beaconClock == 1_700_000_000)
    #expect(eid.deviceId == "front-door" && eid.label == "Front door")
    // An RPA has no K and no clock: whatever is sent for them is ignored.
    guard case .pairWithKey(let rpa) = Self.accepted(Name.pairWithKey, Self.keyed("rpa", k: -1, clock: -1))
    else {
      Issue.record("rpa refused")
      return
    }
    #expect(rpa.scheme == .rpa && rpa.rotationExponent == nil && rpa.beaconClock == nil && rpa.label == nil)
    // The edges of K and the clock.
    #expect(Self.accepted(Name.pairWithKey, Self.keyed(k: 0, clock: 0)) != nil)
    #expect(Self.accepted(Name.pairWithKey, Self.keyed(k: 15, clock: 4_294_967_295)) != nil)
  }

  @Test func pairWithKeyRefusalsNeverRepeatTheKey() {
    let cases: [([DBusValue], String)] = [
      (
        Array(Self.keyed().prefix(4)),
        "PairWithKey takes (s scheme, s key, i rotationExponent, x beaconClock, s deviceId, s label)"
      ),
      (Self.keyed("EID"), "scheme must be eid or rpa, not \"EID\""),
      (Self.keyed(key: String(Self.key.dropLast())), "key must be 32 hex digits (16 bytes)"),
      (Self.keyed(key: Self.key + "0"), "key must be 32 hex digits (16 bytes)"),
      (Self.keyed(key: "g" + Self.key.dropFirst()), "key must be 32 hex digits (16 bytes)"),
      (Self.keyed(k: 16), "rotationExponent must be 0 to 15"),
      (Self.keyed(k: -1), "rotationExponent must be 0 to 15"),
      (Self.keyed(clock: -1), "beaconClock must be 0 to 4294967295"),
      (Self.keyed(clock: 4_294_967_296), "beaconClock must be 0 to 4294967295"),
      (
        Self.keyed(device: ""),
        "device ID \"\" is empty; a device ID is 1 to 128 bytes of printable text, not starting or ending with a space"
      ),
    ]
    for (values, sentence) in cases {
      let refusal = Self.refusal(Name.pairWithKey, values)
      #expect(refusal == sentence)
      if let key = values[1].string, key.count >= 16 { #expect(refusal?.contains(key) == false) }
    }
  }

  /// `| 0x20` lowers a hex letter, and also turns the control characters U+0010…U+0019 into the
  /// digits 0…9: they are not digits of a key.
  @Test func pairWithKeyRefusesControlCharactersThatLowerToDigits() {
    let control = String(repeating: "\u{10}\u{11}", count: 16)
    #expect(
      Self.refusal(Name.pairWithKey, Self.keyed(key: control)) == "key must be 32 hex digits (16 bytes)")
  }

  @Test func unpairTakesADeviceID() {
    #expect(Self.accepted(Name.unpair, [.string("van-7")]) == .unpair("van-7"))
    #expect(Self.refusal(Name.unpair, []) == "Unpair takes (s deviceId)")
    #expect(Self.refusal(Name.unpair, [.int32(7)]) == "Unpair takes (s deviceId)")
    #expect(
      Self.refusal(Name.unpair, [.string("van\n7")])?.hasPrefix("device ID \"van\\n7\" contains the control")
        == true)
  }

  @Test func tripStartAndEndTakeATripID() {
    let rule = "a trip ID is 1 to 128 visible ASCII characters: letters, digits and punctuation, no spaces"
    for (member, name) in [(Name.tripStart, "TripStart"), (Name.tripEnd, "TripEnd")] {
      #expect(Self.refusal(member, []) == "\(name) takes (s tripId)")
      #expect(Self.refusal(member, [.string("trip 1")]) == "trip ID \"trip 1\" contains U+0020; \(rule)")
      #expect(
        Self.refusal(member, [.string(String(repeating: "t", count: 129))])
          == "trip ID \"\(String(repeating: "t", count: 40))…\" is 129 bytes long; \(rule)")
    }
    #expect(Self.accepted(Name.tripStart, [.string("trip-1")]) == .tripStart("trip-1"))
    #expect(Self.accepted(Name.tripEnd, [.variant(.string("trip-1"))]) == .tripEnd("trip-1"))
  }

  @Test func tripEventsChecksTheCapBeforeDecoding() throws {
    let signature = "TripEvents takes (s tripId, s eventsJSONArray)"
    let json = #"[{"type":"ignition","at":1.50},{"type":"stop"}]"#
    let events = try TripEvent.batch(fromJSON: Array(json.utf8))
    #expect(
      Self.accepted(Name.tripEvents, [.string("trip-1"), .string(json)]) == .tripEvents("trip-1", events))
    #expect(Self.refusal(Name.tripEvents, [.string("trip-1")]) == signature)
    #expect(Self.refusal(Name.tripEvents, [.int32(1), .string(json)]) == signature)
    #expect(
      Self.refusal(Name.tripEvents, [.string("trip-1"), .string(#"{"type":"x"}"#)])?.hasPrefix(
        "the events must be a JSON array of objects: ") == true)
    // Not JSON at all, and one byte over the cap: refused for its length, not its text.
    let over = String(repeating: "x", count: TripEventBatch.maximumJSONBytes + 1)
    #expect(
      Self.refusal(Name.tripEvents, [.string("trip-1"), .string(over)])
        == TripEventBatch.refusal(jsonBytes: TripEventBatch.maximumJSONBytes + 1))
  }

  @Test func tripRetryTakesATripIDOrNone() {
    #expect(Self.accepted(Name.tripRetry, []) == .tripRetry(nil))
    #expect(Self.accepted(Name.tripRetry, [.string("")]) == .tripRetry(nil))
    #expect(Self.accepted(Name.tripRetry, [.int32(1)]) == .tripRetry(nil))
    #expect(Self.accepted(Name.tripRetry, [.string("trip-1")]) == .tripRetry("trip-1"))
    #expect(
      Self.refusal(Name.tripRetry, [.string("trip 1")])?.hasPrefix("trip ID \"trip 1\" contains U+0020")
        == true)
  }

  @Test func tripAssignTakesATripAndADevice() {
    let signature = "TripAssign takes (s tripId, s deviceId)"
    #expect(
      Self.accepted(Name.tripAssign, [.string("trip-1"), .string("van-7")]) == .tripAssign("trip-1", "van-7"))
    #expect(Self.refusal(Name.tripAssign, [.string("trip-1")]) == signature)
    #expect(Self.refusal(Name.tripAssign, [.int32(1), .string("van-7")]) == signature)
    #expect(
      Self.refusal(Name.tripAssign, [.string("trip 1"), .string("van-7")])?.hasPrefix("trip ID") == true)
    #expect(
      Self.refusal(Name.tripAssign, [.string("trip-1"), .string("")])?.hasPrefix("device ID \"\" is empty")
        == true)
  }
}
