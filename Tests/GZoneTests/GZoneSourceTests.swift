import BeaconCore
import BeaconTestSupport
import Foundation
import GZone
import Synchronization
import Testing

/// Loading: the payload folder, shape errors that name the file, and the four requests in
/// parallel failing as a whole.
@Suite struct GZoneSourceTests {
  @Test func loadsTheFixtureFolderKeepingEveryField() async throws {
    let load = try await DirectoryGZoneSource(directory: Make.fixture("load1")).load()
    #expect(load.experienceLevels.count == 3)
    #expect(load.experienceLevels[0]["icon"]?.stringValue == "silver.png")
    #expect(load.player["nickname"]?.stringValue == "van 7")
    let state = GZoneState(load)
    #expect(state.level?.name == "Silver")
    #expect(state.inProgress.count == 1)
    #expect(state.rewards.count == 1)
  }

  @Test func malformedFilesAreNamed() async throws {
    await #expect {
      try await DirectoryGZoneSource(directory: Make.fixture("bad-json")).load()
    } throws: { error in
      let error = error as? GZoneError
      return error?.code == .invalidJSON && error?.origin.hasSuffix("bad-json/player.json") == true
    }
    await #expect {
      try await DirectoryGZoneSource(directory: Make.fixture("bad-shape")).load()
    } throws: { error in
      (error as? GZoneError)?.description.hasSuffix(
        "bad-shape/game-rounds.json: expected the game rounds as a JSON array, found object") == true
    }
    await #expect {
      try await DirectoryGZoneSource(directory: "/nonexistent/gzone").load()
    } throws: { error in (error as? GZoneError)?.message.contains("no such folder") == true }
  }

  struct ShapeCase: Sendable, CustomTestStringConvertible {
    var payload: GZonePayload
    var json: String
    var message: String
    var testDescription: String { "\(payload.fileName): \(json)" }
  }

  static let shapeCases: [ShapeCase] = [
    .init(payload: .player, json: "[]", message: "expected the player as a JSON object, found array"),
    .init(payload: .player, json: #"{"currency": 1}"#, message: "the player has no \"experience\""),
    .init(
      payload: .player, json: #"{"experience": "lots"}"#,
      message: "the player's \"experience\" must be a number, found string"),
    .init(
      payload: .experienceLevels, json: "{}",
      message: "expected the experience levels as a JSON array, found object"),
    .init(
      payload: .experienceLevels, json: "[1]",
      message: "item 0 of the experience levels must be an object, found number"),
    .init(
      payload: .experienceLevels, json: #"[{"levelPointStart": 0, "levelPointEnd": 1}]"#,
      message: "level 0 has neither \"levelName\" nor \"name\""),
    .init(
      payload: .experienceLevels, json: #"[{"name": "a", "levelPointEnd": 1}]"#,
      message: "level 0 has no \"levelPointStart\""),
    .init(
      payload: .experienceLevels, json: #"[{"name": "a", "levelPointStart": 5, "levelPointEnd": 1}]"#,
      message: "level 0: levelPointEnd 1 is below levelPointStart 5"),
    .init(
      payload: .availableGames, json: "null",
      message: "expected the available games as a JSON array, found null"),
    .init(
      payload: .gameRounds, json: #"[{"rewards": "none"}]"#,
      message: "round 0: \"rewards\" must be an array, found string"),
    .init(payload: .gameRounds, json: "", message: "the file is empty"),
  ]

  @Test(arguments: shapeCases)
  func shapeErrors(_ row: ShapeCase) {
    #expect {
      try GZoneLoad.parse(Data(row.json.utf8), as: row.payload, origin: row.payload.fileName)
    } throws: { error in
      (error as? GZoneError)?.description == "\(row.payload.fileName): \(row.message)"
    }
  }

  @Test func unknownFieldsAndNullRewardsAreFine() throws {
    _ = try GZoneLoad.parse(Data(#"{"experience": 1, "new": {"x": [1]}}"#.utf8), as: .player, origin: "p")
    _ = try GZoneLoad.parse(
      Data(#"[{"rewards": null, "endOn": null, "z": 1}]"#.utf8), as: .gameRounds, origin: "r")
  }

  /// A source whose requests wait until all four are in flight: only a parallel load finishes.
  final class Counter: Sendable {
    let value = Mutex(0)
    let cancelled = Mutex(0)
  }

  struct ParallelSource: GZoneSource {
    let inFlight = Counter()
    var failing: GZonePayload?
    let files = DirectoryGZoneSource(directory: Make.fixture("load1"))

    func origin(of payload: GZonePayload) -> String { "test://\(payload.rawValue)" }

    func fetch(_ payload: GZonePayload) async throws -> Data {
      inFlight.value.withLock { $0 += 1 }
      if payload == failing { throw GZoneError(.unreadable, origin: origin(of: payload), "HTTP 503") }
      do {
        try await waitUntil("the four requests in flight at once", poll: .milliseconds(5)) {
          inFlight.value.withLock { $0 } >= 4
        }
        if failing != nil { try await Task.sleep(for: .seconds(600)) }  // cancelled by the failure
      } catch is CancellationError {
        inFlight.cancelled.withLock { $0 += 1 }
        throw CancellationError()
      }
      return try await files.fetch(payload)
    }
  }

  @Test func theFourRequestsRunInParallel() async throws {
    let load = try await ParallelSource().load()
    #expect(load.gameRounds.count == 2)
  }

  @Test func oneFailingRequestFailsTheLoadAtOnce() async throws {
    let source = ParallelSource(failing: .availableGames)
    await #expect {
      try await source.load()
    } throws: { error in
      (error as? GZoneError)?.description == "test://availableGames: HTTP 503"
    }
    // The three others were cancelled, not waited for (they would sleep ten minutes).
    #expect(source.inFlight.cancelled.withLock { $0 } == 3)
  }

  /// Every request fails, the last payload's first; the others fail on their own after it (as a
  /// file read does, which no cancellation stops).
  struct AllFailingSource: GZoneSource {
    let lastFailed = Counter()

    func origin(of payload: GZonePayload) -> String { "test://\(payload.rawValue)" }

    func fetch(_ payload: GZonePayload) async throws -> Data {
      if payload == .gameRounds {
        lastFailed.value.withLock { $0 = 1 }
      } else {
        // Cancelled only once the last payload has failed, so `try?` lets it fail after that.
        try? await waitUntil("the last payload failed", poll: .milliseconds(5)) {
          lastFailed.value.withLock { $0 } == 1
        }
      }
      throw GZoneError(.unreadable, origin: origin(of: payload), "HTTP 503")
    }
  }

  @Test func theErrorNamesTheFirstFailingPayloadWhicheverFailsFirst() async throws {
    await #expect {
      try await AllFailingSource().load()
    } throws: { error in
      (error as? GZoneError)?.description == "test://experienceLevels: HTTP 503"
    }
  }
}
