import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

/// The rules of each identifier type, as tables: what is accepted, what is refused and with which
/// words. Every door (CLI, D-Bus, configuration, scenario, upload) builds these types, so these
/// rules are the doors' rules.
@Suite(.offThePool) struct IdentifierTests {
  static let longest = String(repeating: "a", count: 128)

  @Test(arguments: ["t1", "trip-2026-12-01T08:15:00Z", "A_b.c~d!#$%", longest, "0"])
  func tripIDAccepts(text: String) throws {
    #expect(try TripID(text).rawValue == text)
  }

  @Test(arguments: [
    ("", "trip ID \"\" is empty"),
    ("t\r\n1", "trip ID \"t\\r\\n1\" contains the control or invisible character U+000D"),
    ("t\n", "contains the control or invisible character U+000A"),
    ("t\u{7F}", "contains the control or invisible character U+007F"),
    ("t\u{0}x", "contains the control or invisible character U+0000"),
    ("t\u{85}", "contains the control or invisible character U+0085"),
    ("t\u{2028}", "contains the control or invisible character U+2028"),
    ("t\u{202E}", "contains the control or invisible character U+202E"),
    ("trip 1", "contains U+0020"),
    ("trïp", "contains U+00EF"),
    (String(repeating: "a", count: 129), "is 129 bytes long"),
  ])
  func tripIDRefuses(text: String, words: String) {
    #expect {
      _ = try TripID(text)
    } throws: { error in
      let message = (error as? IdentifierError)?.description ?? ""
      return message.contains(words)
        && message.hasSuffix(
          "a trip ID is 1 to 128 visible ASCII characters: letters, digits and punctuation, no spaces")
    }
  }

  @Test(arguments: ["UNIT-0042", "van 7", "Fahrzeug-Ü", "車両-7", String(repeating: "é", count: 64)])
  func deviceIDAccepts(text: String) throws {
    #expect(try DeviceID(text).rawValue == text)
  }

  @Test(arguments: [
    ("", "is empty"),
    (" UNIT", "starts or ends with a space"),
    ("UNIT ", "starts or ends with a space"),
    ("UNIT\t7", "U+0009"),
    ("bad\nid", "U+000A"),
    ("a\u{1B}[31m", "U+001B"),
    ("x\u{7F}", "U+007F"),
    ("x\u{200B}", "U+200B"),
    ("x\u{2029}", "U+2029"),
    ("x\u{E000}", "U+E000"),
    (String(repeating: "é", count: 65), "is 130 bytes long"),
  ])
  func deviceIDRefuses(text: String, words: String) {
    #expect {
      _ = try DeviceID(text)
    } throws: { error in
      let message = (error as? IdentifierError)?.description ?? ""
      return message.hasPrefix("device ID \"") && message.contains(words)
        && message.hasSuffix(
          "a device ID is 1 to 128 bytes of printable text, not starting or ending with a space")
    }
  }

  @Test(arguments: [("hci0", 0), ("hci1", 1), ("hci10", 10), ("hci9999", 9999)])
  func adapterAccepts(text: String, index: Int) throws {
    let id = try HCIDeviceID(text)
    #expect(Int(id.index) == index)
    #expect(id.name == text)
    #expect(HCIDeviceID(utf8: Array(text.utf8)) == id)
  }

  @Test(arguments: [
    "", "hci", "0", "1", "hci01", "hci-1", "hci+1", "hci10000", "hci65536", "HCI0", "hci0 ", "wlan0",
    "hci0\n", "hci１",
  ])
  func adapterRefuses(text: String) {
    #expect(HCIDeviceID(utf8: Array(text.utf8)) == nil)
    #expect {
      _ = try HCIDeviceID(text)
    } throws: { error in
      (error as? IdentifierError)?.description.hasSuffix(
        "an adapter is hci followed by a number from 0 to 9999 without leading zeros, like hci0") == true
    }
  }

  static let uuid = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"

  @Test(
    arguments: [
      (nil, nil, nil, nil), ("0", nil, 0, nil), ("65535", "65535", 65535, 65535), ("1", "7", 1, 7),
    ] as [(String?, String?, Int?, Int?)])
  func pairingIdentityAccepts(major: String?, minor: String?, wantMajor: Int?, wantMinor: Int?) throws {
    let identity = try PairingIdentity(uuid: Self.uuid, major: major, minor: minor)
    #expect(identity.major.map(Int.init) == wantMajor)
    #expect(identity.minor.map(Int.init) == wantMinor)
  }

  /// Out of range is an error, never a wildcard and never clamped.
  @Test(
    arguments: [
      (70000, 1, "major \"70000\" must be a whole number from 0 to 65535"),
      (1, -7, "minor \"-7\" must be a whole number from 0 to 65535"),
      (-1, 1, "major \"-1\" must be a whole number from 0 to 65535"),
      (65536, nil, "major \"65536\" must be a whole number from 0 to 65535"),
      (nil, 3, "minor \"3\" needs a major"),
    ] as [(Int?, Int?, String)])
  func pairingIdentityRefusesNumbers(major: Int?, minor: Int?, message: String) throws {
    let uuid = try #require(UUID(uuidString: Self.uuid))
    #expect {
      _ = try PairingIdentity(uuid: uuid, major: major, minor: minor)
    } throws: { error in
      (error as? IdentifierError)?.description.hasPrefix(message) == true
    }
  }

  @Test(
    arguments: [
      ("nope", nil, "UUID \"nope\" is not a UUID"), (uuid, "0x10", "major \"0x10\" must be"),
      (uuid, "+1", "major \"+1\" must be"), (uuid, "", "major \"\" must be"),
      (uuid, "1e3", "major \"1e3\" must be"),
      (uuid, "000001", "major \"000001\" must be"),
    ] as [(String, String?, String)])
  func pairingIdentityRefusesText(uuid: String, major: String?, message: String) {
    #expect {
      _ = try PairingIdentity(uuid: uuid, major: major, minor: nil)
    } throws: { error in
      (error as? IdentifierError)?.description.hasPrefix(message) == true
    }
  }

  @Test func aPairingIsCheckedByTheSameRules() throws {
    let uuid = try #require(UUID(uuidString: Self.uuid))
    #expect(throws: IdentifierError.self) {
      try Pairing(uuid: uuid, major: 1, minor: 1, deviceId: "ok", label: "two\nlines").validate()
    }
    try Pairing(uuid: uuid, major: 1, minor: nil, deviceId: "ok", label: "van 7").validate()
  }

  /// Values are echoed cut short and escaped: a 50 MB value or a forged line never reaches a log.
  @Test func messagesQuoteValuesShortAndEscaped() {
    let huge = String(repeating: "x", count: 50_000_000)
    #expect(huge.quotedForMessage == "\"" + String(repeating: "x", count: 40) + "…\"")
    #expect("a\r\nb\"\\\u{1B}\u{202E}".quotedForMessage == #""a\r\nb\"\\\u{1B}\u{202E}""#)
    let error = IdentifierError(field: "trip ID", value: huge, rule: "is too long")
    #expect(error.description.count < 80)
  }

  /// The Idempotency-Key is built from validated parts or not at all: the trip ID is a `TripID`
  /// (a CR/LF cannot reach a batch), and a negative sequence makes no key.
  @Test func idempotencyKeyNeedsAValidTripID() throws {
    func batch(_ trip: String, _ sequence: Int = 3) throws -> TaggedTripBatch {
      TaggedTripBatch(
        batch: TripEventBatch(tripId: try TripID(trip), sequence: sequence, events: [], receivedAt: .zero),
        deviceId: "X", resolution: .assigned(deviceId: "X"))
    }
    #expect(try batch("t1").validatedIdempotencyKey() == "t1#3")
    #expect(throws: IdentifierError.self) { try batch("t\r\nInjected: 1") }
    #expect(throws: IdentifierError.self) { try batch("t1", -1).validatedIdempotencyKey() }
  }
}

/// The one escaping rule for messages and text-mode values: every control character
/// (C0, DEL, C1) and bidi control is shown as `\u{…}`, line feeds between lines stay.
@Suite struct MessageEscapingTests {
  // Sums of typed parts: one untyped chain of seven is more than Swift 6.2's type checker takes.
  static let c0: [UInt32] = Array(0x00...0x09) + Array(0x0B...0x1F)
  static let c1: [UInt32] = [0x7F] + Array(0x80...0x9F)
  static let bidi: [UInt32] = Array(0x202A...0x202E) + Array(0x2066...0x2069) + [0x200E, 0x200F, 0x061C]
  static let hostile: [UInt32] = c0 + c1 + bidi

  @Test(arguments: hostile)
  func everyControlAndBidiCharacterIsEscaped(_ value: UInt32) throws {
    let scalar = try #require(Unicode.Scalar(value))
    let text = "a" + String(Character(scalar)) + "b\nc"
    let shown = text.escapingControlCharactersExceptNewlines
    #expect(!shown.unicodeScalars.contains(scalar))
    #expect(shown.hasSuffix("b\nc"), "the line feed between lines stays: \(shown.debugDescription)")
    #expect(shown.hasPrefix("a\\"), "\(shown.debugDescription)")
    // One line of a log: the same rule, the line feed escaped too.
    #expect(!text.escapingControlCharacters.contains("\n"))
  }

  @Test func plainTextIsUnchanged() {
    let text = "Level:        Gold (100–200), 50% → Platinum\nvan 7 «ÄÖÜ» 車\n"
    #expect(text.escapingControlCharactersExceptNewlines == text)
  }
}
