/// The fleet's topics checked against each other (docs/fleet.md "Topics"): no two of the status,
/// desired, reported and beacons topics, nor the upload topic on the same broker, may name one
/// topic. Two that overlap loop or mix: with `DesiredTopic = ReportedTopic` the box reads its own
/// answer as a document, refuses it and answers again, thousands of times a second.
///
/// The templates' `{boxId}` and `{deviceId}` stand for any text within one topic level (neither
/// can hold a `/`), so `fleet/{deviceId}/status` overlaps `fleet/{boxId}/status`: a trip of a
/// device named like the box would land on its presence topic. Two topics overlap when some topic
/// name matches both (a wildcard match either way; the topics themselves hold no `+` or `#`).
struct FleetTopicCheck {
  struct Topic {
    var key: String
    var template: String
    /// The line it was set on; 0 for a default.
    var line: Int
  }

  let topics: [Topic]

  init(_ configuration: DaemonConfiguration) {
    let fleet = configuration.fleet
    guard fleet.enabled else {
      topics = []
      return
    }
    var topics = [
      Topic(
        key: "[Fleet] StatusTopic", template: fleet.statusTopic, line: fleet.topicLines["StatusTopic"] ?? 0),
      Topic(
        key: "[Fleet] DesiredTopic", template: fleet.desiredTopic, line: fleet.topicLines["DesiredTopic"] ?? 0
      ),
      Topic(
        key: "[Fleet] ReportedTopic", template: fleet.reportedTopic,
        line: fleet.topicLines["ReportedTopic"] ?? 0),
      Topic(
        key: "[Fleet] BeaconsTopic", template: fleet.beaconsTopic, line: fleet.topicLines["BeaconsTopic"] ?? 0
      ),
    ]
    // The trips go to the upload broker: they meet the fleet's topics only on the same broker.
    if let upload = configuration.mqttSettings, let link = configuration.fleetSettings,
      upload.host == link.host, upload.port == link.port
    {
      topics.append(
        Topic(
          key: "[MQTT] Topic", template: configuration.mqtt.topic,
          line: configuration.mqtt.lines["Topic"] ?? 0))
    }
    self.topics = topics
  }

  /// The first two topics that overlap, as a refusal at the later one's line (the one set in the
  /// file, when the other is a default), naming both keys and the fix.
  var overlap: (line: Int, message: String)? {
    for (index, first) in topics.enumerated() {
      for second in topics[(index + 1)...] where Self.overlaps(first.template, second.template) {
        let same = first.template == second.template
        let how = same ? "are the same topic" : "overlap (one topic name matches both)"
        return (
          max(first.line, second.line),
          "\(first.key) \(first.template.quotedForMessage) and \(second.key) \(second.template.quotedForMessage) \(how): the box would read or overwrite its own messages; give each a topic of its own"
        )
      }
    }
    return nil
  }

  /// Whether some topic name matches both templates, `{boxId}` and `{deviceId}` standing for any
  /// non-empty text without a `/`.
  static func overlaps(_ first: String, _ second: String) -> Bool {
    let a = first.split(separator: "/", omittingEmptySubsequences: false)
    let b = second.split(separator: "/", omittingEmptySubsequences: false)
    guard a.count == b.count else { return false }
    return zip(a, b).allSatisfy { levelsMeet(glob($0), glob($1)) }
  }

  /// A glob token: a character, any one character, or any run (possibly empty).
  enum Token: Equatable {
    case character(Character)
    case one
    case run
  }

  /// A placeholder is one character or more: any one, then any run.
  static func glob(_ level: Substring) -> [Token] {
    var tokens: [Token] = []
    var rest = level
    while let first = rest.first {
      if rest.hasPrefix("{boxId}") || rest.hasPrefix("{deviceId}") {
        tokens += [.one, .run]
        rest = rest.dropFirst(rest.hasPrefix("{boxId}") ? 7 : 10)
      } else {
        tokens.append(.character(first))
        rest = rest.dropFirst()
      }
    }
    return tokens
  }

  /// Whether two globs share a string (the classic two-pattern walk, memoised).
  static func levelsMeet(_ a: [Token], _ b: [Token]) -> Bool {
    var seen = Set<Int>()
    func meet(_ i: Int, _ j: Int) -> Bool {
      guard seen.insert(i * (b.count + 1) + j).inserted else { return false }
      if i == a.count, j == b.count { return true }
      if i < a.count, a[i] == .run { return meet(i + 1, j) || (j < b.count && meet(i, j + 1)) }
      if j < b.count, b[j] == .run { return meet(i, j + 1) || (i < a.count && meet(i + 1, j)) }
      guard i < a.count, j < b.count else { return false }
      switch (a[i], b[j]) {
      case (.character(let x), .character(let y)) where x != y: return false
      default: return meet(i + 1, j + 1)
      }
    }
    return meet(0, 0)
  }
}

/// Where keys were read, for messages only: two configurations that differ in nothing but the
/// lines of their keys are equal.
struct KeyLines: Hashable, Sendable {
  var lines: [String: Int] = [:]
  subscript(key: String) -> Int? {
    get { lines[key] }
    set { lines[key] = newValue }
  }
  static func == (_: KeyLines, _: KeyLines) -> Bool { true }
  func hash(into _: inout Hasher) {}
}
