import BeaconCore

/// One experience level: its name and point range.
public struct GZoneLevel: Hashable, Sendable {
  public var name: String
  public var start: Double
  public var end: Double
  /// `start` and `end` as the backend wrote them (`GZoneNumber.literal`), for output: a number
  /// prints as it came (issue 28), `100.50` as `100.50`.
  public var startText: String
  public var endText: String

  public init(name: String, start: Double, end: Double) {
    self.name = name
    self.start = start
    self.end = end
    startText = GZoneNumber.text(start)
    endText = GZoneNumber.text(end)
  }

  /// `{name, start, end}`, the numbers as they came.
  public var json: JSONValue {
    .object(["name": .string(name), "start": .raw(startText), "end": .raw(endText)])
  }

  /// `levelName`, else `name` (a number is taken as its text).
  static func name(of fields: [String: JSONValue]) -> String? {
    for key in ["levelName", "name"] {
      switch fields[key] {
      case .string(let s)?: return s
      case .int(let i)?: return String(i)
      case .double(let d)?: return GZoneNumber.text(d)
      case .raw(let text)?: return text
      default: continue
      }
    }
    return nil
  }

  init?(_ value: JSONValue) {
    guard let fields = value.objectValue, let name = Self.name(of: fields),
      let start = GZoneNumber.of(fields["levelPointStart"]), let end = GZoneNumber.of(fields["levelPointEnd"])
    else { return nil }
    self.init(name: name, start: start, end: end)
    startText = GZoneNumber.literal(fields["levelPointStart"]) ?? startText
    endText = GZoneNumber.literal(fields["levelPointEnd"]) ?? endText
  }
}

/// Where an experience value sits among the levels.
///
/// The rules (the seed's "Current level / Next level / progress", with its edge cases decided):
/// - Levels are sorted by start, then end, then the backend's order; the backend's order is not
///   trusted.
/// - The current level is the *last* sorted level whose `start…end` (both inclusive) contains the
///   experience. Where ranges overlap or touch (`0…100`, `100…200`), that is the higher one.
/// - In a gap between ranges, the current level is the last one whose start is at or below the
///   experience, with progress 1: it is done, and the next has not begun.
/// - Above the highest range: the last level, progress 1, no next level.
/// - Below the first range: no current level, the first level as next, progress 0.
/// - No levels at all: no level, no next level, no progress.
/// - progress = (experience − start) ÷ (end − start), clamped to 0…1; a zero-width range that
///   contains the experience has progress 1.
/// - The next level is the one after the current level in the sorted order.
public struct GZoneLevelStanding: Hashable, Sendable {
  public var level: GZoneLevel?
  public var nextLevel: GZoneLevel?
  /// 0…1, or nil when there are no levels.
  public var progress: Double?

  public init(experience: Double, levels: [GZoneLevel]) {
    let sorted = levels.enumerated().sorted { a, b in
      (a.element.start, a.element.end, a.offset) < (b.element.start, b.element.end, b.offset)
    }.map(\.element)
    guard !sorted.isEmpty else {
      level = nil
      nextLevel = nil
      progress = nil
      return
    }
    if let index = sorted.lastIndex(where: { $0.start <= experience && experience <= $0.end }) {
      let current = sorted[index]
      level = current
      nextLevel = index + 1 < sorted.count ? sorted[index + 1] : nil
      let width = current.end - current.start
      progress = width > 0 ? min(1, max(0, (experience - current.start) / width)) : 1
    } else if let index = sorted.lastIndex(where: { $0.start <= experience }) {
      // A gap after this level, or above the highest range.
      level = sorted[index]
      nextLevel = index + 1 < sorted.count ? sorted[index + 1] : nil
      progress = 1
    } else {
      level = nil
      nextLevel = sorted[0]
      progress = 0
    }
  }
}
