import BeaconCore
import Foundation
import GZone
import Testing

/// Seeded random loads: deriving never crashes, a load diffed against itself is silent, and the
/// stored form reads back the same.
@Suite struct GZonePropertyTests {
  struct Random {
    var rng: SeededGenerator

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    mutating func bool() -> Bool { Bool.random(using: &rng) }

    mutating func scalar() -> JSONValue {
      switch int(0...5) {
      case 0: .null
      case 1: .bool(bool())
      case 2: .int(Int64(int(-1000...1000)))
      case 3: .double(Double(int(-100_000...100_000)) / 7)
      case 4: .string(["", " ", "x", "2026-11-22", "é", "\"q\""][int(0...5)])
      default: .string(String(int(0...500)))
      }
    }

    mutating func value(depth: Int = 0) -> JSONValue {
      guard depth < 3 else { return scalar() }
      switch int(0...6) {
      case 0: return .array((0..<int(0...3)).map { _ in value(depth: depth + 1) })
      case 1:
        var o: [String: JSONValue] = [:]
        for _ in 0..<int(0...3) {
          o[["a", "id", "name", "endOn", "rewards"][int(0...4)]] = value(depth: depth + 1)
        }
        return .object(o)
      default: return scalar()
      }
    }

    mutating func number() -> JSONValue {
      bool() ? .int(Int64(int(-50...600))) : .double(Double(int(-500...6000)) / 10)
    }

    mutating func load() -> GZoneLoad {
      let levels: [JSONValue] = (0..<int(0...6)).map { i in
        let start = Double(int(-50...500))
        let end = start + Double(int(0...200))
        var o: [String: JSONValue] = ["levelPointStart": .double(start), "levelPointEnd": .double(end)]
        o[bool() ? "levelName" : "name"] = .string("L\(i)")
        if bool() { o["extra"] = value() }
        return .object(o)
      }
      let rounds: [JSONValue] = (0..<int(0...6)).map { _ in
        var o: [String: JSONValue] = [:]
        switch int(0...3) {
        case 0: o["id"] = .string("r\(int(0...4))")
        case 1: o["roundId"] = .int(Int64(int(0...4)))
        case 2: o["gameRoundId"] = .int(Int64(int(0...4)))
        default: o["name"] = .string("n\(int(0...2))")
        }
        switch int(0...3) {
        case 0: break
        case 1: o["endOn"] = .null
        case 2: o["endOn"] = .string("")
        default: o["endOn"] = .string("2026-11-\(int(10...28))")
        }
        if bool() { o["rewards"] = .array((0..<int(0...3)).map { _ in value() }) }
        if bool() { o["other"] = value() }
        return .object(o)
      }
      let games: [JSONValue] = (0..<int(0...4)).map { _ in
        var o: [String: JSONValue] = ["x": value()]
        if bool() { o["gameId"] = .string("g\(int(0...4))") }
        return .object(o)
      }
      var player: [String: JSONValue] = ["experience": number()]
      if bool() { player["currency"] = bool() ? number() : value() }
      return try! GZoneLoad(
        experienceLevels: .array(levels), player: .object(player), availableGames: .array(games),
        gameRounds: .array(rounds))
    }
  }

  @Test(arguments: 1...20)
  func randomLoadsNeverCrashAndSelfDiffIsSilent(seed: Int) throws {
    var random = Random(rng: SeededGenerator(seed: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15))
    var previous = random.load()
    for _ in 0..<25 {
      let load = random.load()
      let state = GZoneState(load)
      if let p = state.progress { #expect((0...1).contains(p)) }
      if state.level == nil, state.progress != nil { #expect(state.nextLevel != nil) }
      _ = try JSONValue.parse(Data(state.jsonText.utf8))
      #expect(GZoneDiff.events(from: load, to: load).isEmpty, "\(load.json.compactText)")
      for event in GZoneDiff.events(from: previous, to: load) {
        // Every event reads back from its JSON line, as a signal's consumer reads it (numbers
        // print in their shortest form, so the text, not the value, is what round-trips).
        #expect(GZoneEvent(json: try JSONValue.parse(Data(event.jsonText.utf8)))?.jsonText == event.jsonText)
      }
      #expect(try GZoneLoad(json: load.json, origin: "store") == load)
      previous = load
    }
  }

  @Test(arguments: 1...10)
  func randomJSONIsAcceptedOrRefusedNeverCrashes(seed: Int) {
    var random = Random(rng: SeededGenerator(seed: UInt64(seed)))
    for _ in 0..<200 {
      for payload in GZonePayload.allCases {
        do { try GZoneLoad.validate(random.value(), as: payload, origin: "x") } catch {
          #expect(error.description.hasPrefix("x: "))
        }
      }
    }
  }
}
