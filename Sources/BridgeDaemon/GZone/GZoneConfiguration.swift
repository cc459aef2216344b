import BeaconCore
import FoundationEssentials
import GZone

/// The `[GZone]` section: where the daemon's poller loads the four payloads.
///
/// ```ini
/// [GZone]
/// ExperienceLevelsURL = https://api.example/gzone/experience-levels
/// PlayerURL = https://api.example/gzone/players/{unitId}
/// AvailableGamesURL = https://api.example/gzone/players/{unitId}/games
/// GameRoundsURL = https://api.example/gzone/policies/{policyNumber}/rounds
/// UnitId = 4711
/// PolicyNumber = P-123
/// TokenFile = /etc/beaconbridge/gzone-token
/// Interval = 300
/// ```
///
/// The four URLs go together: all or none (none: no poller). `{unitId}`, `{policyNumber}` and
/// `{userId}` in a URL are replaced by `UnitId`, `PolicyNumber` and `UserId` (percent-encoded);
/// a placeholder whose value is not set is an error. `TokenFile` defaults to `[Upload]`'s.
public struct GZoneConfiguration: Hashable, Sendable {
  public var urls: [GZonePayload: String] = [:]
  public var unitId: String?
  public var policyNumber: String?
  public var userId: String?
  public var tokenFile: String?
  /// Seconds between loads.
  public var interval: Double = 300
  /// Seconds after a batch is posted before the reload, so that the backend has scored it.
  public var afterUploadDelay: Double = 30

  public init() {}

  public var isEnabled: Bool { !urls.isEmpty }

  static let urlKeys: [(key: String, payload: GZonePayload)] = [
    ("ExperienceLevelsURL", .experienceLevels), ("PlayerURL", .player),
    ("AvailableGamesURL", .availableGames),
    ("GameRoundsURL", .gameRounds),
  ]

  public static let keys =
    urlKeys.map(\.key) + ["UnitId", "PolicyNumber", "UserId", "TokenFile", "Interval", "AfterUploadDelay"]

  /// Sets one key; the error is the message for its line.
  mutating func set(_ key: String, to value: String) throws(GZoneConfigurationError) {
    if let payload = Self.urlKeys.first(where: { $0.key == key })?.payload {
      guard value.hasPrefix("http://") || value.hasPrefix("https://") else {
        throw GZoneConfigurationError("\(key) must start with http:// or https://")
      }
      urls[payload] = value
      return
    }
    switch key {
    case "UnitId": unitId = value
    case "PolicyNumber": policyNumber = value
    case "UserId": userId = value
    case "TokenFile":
      guard value.hasPrefix("/") else { throw GZoneConfigurationError("TokenFile must be an absolute path") }
      tokenFile = value
    case "Interval", "AfterUploadDelay":
      let rule = SettingNumber(key == "Interval" ? 10...86_400 : 0...86_400, unit: "seconds")
      let seconds: Double
      do { seconds = try rule.parse(key, value) } catch { throw GZoneConfigurationError(error.description) }
      if key == "Interval" { interval = seconds } else { afterUploadDelay = seconds }
    default:
      throw GZoneConfigurationError(
        "unknown key \(key) in [GZone] (known: \(Self.keys.joined(separator: ", ")))")
    }
  }

  /// What is wrong with the section as a whole (a URL missing, a placeholder without a value).
  public func problems() -> [String] {
    guard isEnabled else { return [] }
    var problems: [String] = []
    for (key, payload) in Self.urlKeys {
      guard let template = urls[payload] else {
        problems.append("[GZone] needs all four URLs; \(key) is missing")
        continue
      }
      for (placeholder, value, name) in placeholders where template.contains(placeholder) && value == nil {
        problems.append("[GZone] \(key) uses \(placeholder) but \(name) is not set")
      }
    }
    return problems
  }

  var placeholders: [(String, String?, String)] {
    [
      ("{unitId}", unitId, "UnitId"), ("{policyNumber}", policyNumber, "PolicyNumber"),
      ("{userId}", userId, "UserId"),
    ]
  }

  /// A payload's URL with the placeholders filled in (nil for an unknown payload).
  public func url(for payload: GZonePayload) -> String? {
    guard var text = urls[payload] else { return nil }
    for (placeholder, value, _) in placeholders {
      guard let value else { continue }
      text = text.replacing(placeholder, with: Self.percentEncoded(value))
    }
    return text
  }

  /// RFC 3986 unreserved characters stay; everything else is %XX of its UTF-8 bytes.
  static func percentEncoded(_ value: String) -> String {
    var out = ""
    for byte in value.utf8 {
      let c = Character(Unicode.Scalar(byte))
      if byte < 0x80 && (c.isLetter || c.isNumber || "-._~".contains(c)) {
        out.append(c)
      } else {
        let hex = String(byte, radix: 16, uppercase: true)
        out += "%" + (hex.count == 1 ? "0" : "") + hex
      }
    }
    return out
  }
}

struct GZoneConfigurationError: Error {
  var message: String
  init(_ message: String) { self.message = message }
}
