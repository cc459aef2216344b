import BeaconCore

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// One load of the four G-Zone payloads, every field kept as it came.
///
/// The initializers check the shape the derivation relies on, and nothing more: unknown fields
/// are kept and never an error. A load is a value, so deriving and diffing are pure functions.
public struct GZoneLoad: Hashable, Sendable {
  /// Level definitions, in the backend's order (not necessarily sorted).
  public var experienceLevels: [JSONValue]
  /// The player object.
  public var player: [String: JSONValue]
  public var availableGames: [JSONValue]
  public var gameRounds: [JSONValue]

  /// Checks the shapes; errors name the payload by `origin` (a file path or a URL).
  public init(
    experienceLevels: JSONValue, player: JSONValue, availableGames: JSONValue, gameRounds: JSONValue,
    origin: (GZonePayload) -> String = { $0.fileName }
  ) throws(GZoneError) {
    self.experienceLevels =
      try Self.validate(experienceLevels, as: .experienceLevels, origin: origin(.experienceLevels))
      .arrayValue ?? []
    self.player = try Self.validate(player, as: .player, origin: origin(.player)).objectValue ?? [:]
    self.availableGames =
      try Self.validate(availableGames, as: .availableGames, origin: origin(.availableGames)).arrayValue ?? []
    self.gameRounds =
      try Self.validate(gameRounds, as: .gameRounds, origin: origin(.gameRounds)).arrayValue ?? []
  }

  /// Parses one payload's bytes and checks its shape.
  public static func parse(_ data: Data, as payload: GZonePayload, origin: String) throws(GZoneError)
    -> JSONValue
  {
    let json: JSONValue
    // The strict reader that keeps each number's text (`JSONText`), so that numbers print as
    // they came.
    do { json = try JSONText.parse(Array(data)) } catch {
      let detail = JSONDiagnosis.reason(data) ?? error.problem
      let reason = data.isEmpty ? "the file is empty" : "not valid JSON (\(detail))"
      throw GZoneError(.invalidJSON, origin: origin, reason)
    }
    return try validate(json, as: payload, origin: origin)
  }

  /// Checks that `json` has the shape `payload` needs; returns it unchanged.
  @discardableResult
  public static func validate(_ json: JSONValue, as payload: GZonePayload, origin: String) throws(GZoneError)
    -> JSONValue
  {
    func fail(_ message: String) -> GZoneError { GZoneError(.wrongShape, origin: origin, message) }
    switch payload {
    case .player:
      guard let player = json.objectValue else {
        throw fail("expected the player as a JSON object, found \(json.typeName)")
      }
      guard let experience = player["experience"] else { throw fail("the player has no \"experience\"") }
      guard GZoneNumber.of(experience) != nil else {
        throw fail("the player's \"experience\" must be a number, found \(experience.typeName)")
      }
    case .experienceLevels, .availableGames, .gameRounds:
      let what =
        switch payload {
        case .experienceLevels: "experience levels"
        case .availableGames: "available games"
        default: "game rounds"
        }
      guard let items = json.arrayValue else {
        throw fail("expected the \(what) as a JSON array, found \(json.typeName)")
      }
      for (i, item) in items.enumerated() {
        guard let fields = item.objectValue else {
          throw fail("item \(i) of the \(what) must be an object, found \(item.typeName)")
        }
        if payload == .experienceLevels {
          guard GZoneLevel.name(of: fields) != nil else {
            throw fail("level \(i) has neither \"levelName\" nor \"name\"")
          }
          for key in ["levelPointStart", "levelPointEnd"] {
            guard let value = fields[key] else { throw fail("level \(i) has no \"\(key)\"") }
            guard GZoneNumber.of(value) != nil else {
              throw fail("level \(i): \"\(key)\" must be a number, found \(value.typeName)")
            }
          }
          let start = GZoneNumber.of(fields["levelPointStart"])!
          let end = GZoneNumber.of(fields["levelPointEnd"])!
          guard end >= start else {
            throw fail(
              "level \(i): levelPointEnd \(GZoneNumber.text(end)) is below levelPointStart \(GZoneNumber.text(start))"
            )
          }
        }
        if payload == .gameRounds, let rewards = fields["rewards"], rewards != .null,
          rewards.arrayValue == nil
        {
          throw fail("round \(i): \"rewards\" must be an array, found \(rewards.typeName)")
        }
      }
    }
    return json
  }

  /// The load as one JSON object (how the daemon's store keeps the last load).
  public var json: JSONValue {
    .object([
      GZonePayload.experienceLevels.rawValue: .array(experienceLevels),
      GZonePayload.player.rawValue: .object(player),
      GZonePayload.availableGames.rawValue: .array(availableGames),
      GZonePayload.gameRounds.rawValue: .array(gameRounds),
    ])
  }

  /// Reads `json` back.
  public init(json: JSONValue, origin: String) throws(GZoneError) {
    func field(_ payload: GZonePayload) throws(GZoneError) -> JSONValue {
      guard let value = json[payload.rawValue] else {
        throw GZoneError(.wrongShape, origin: origin, "no \"\(payload.rawValue)\" in the stored load")
      }
      return value
    }
    try self.init(
      experienceLevels: field(.experienceLevels), player: field(.player),
      availableGames: field(.availableGames),
      gameRounds: field(.gameRounds), origin: { "\(origin) (\($0.rawValue))" })
  }
}

/// Numbers as the backend may send them: JSON numbers, or numeric strings.
enum GZoneNumber {
  static func of(_ value: JSONValue?) -> Double? {
    switch value {
    case .int(let i)?: return Double(i)
    case .double(let d)? where d.isFinite: return d
    case .raw?:
      guard let d = value?.doubleValue, d.isFinite else { return nil }
      return d
    case .string(let s)?:
      guard let d = Double(s.trimmedWhitespace), d.isFinite else { return nil }
      return d
    default: return nil
    }
  }

  /// A JSON number's text as it came (a numeric string's value, printed); nil for what is not a
  /// number (`of`).
  static func literal(_ value: JSONValue?) -> String? {
    guard let d = of(value) else { return nil }
    if case .raw(let text)? = value { return text }
    return text(d)
  }

  static func text(_ d: Double) -> String {
    var out = ""
    JSONWriter.writeNumber(d, to: &out)
    return out
  }
}
