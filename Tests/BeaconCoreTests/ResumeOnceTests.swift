import BeaconCore
import BeaconTestSupport
import Testing

/// The one "resume once" guard: the first result wins, whenever it comes; later ones are dropped
/// (a `CheckedContinuation` resumed twice would trap the test process).
@Suite struct ResumeOnceTests {
  struct Refused: Error, Equatable {}

  @Test func theFirstResultWinsAndLaterOnesAreDropped() async throws {
    let once = ResumeOnce<Int, any Error>()
    let value = try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<Int, any Error>) in
      once.arm(continuation)
      #expect(once.resume(with: .success(1)))
      #expect(!once.resume(with: .success(2)))
      #expect(!once.resume(with: .failure(Refused())))
    }
    #expect(value == 1)
  }

  @Test func aResultBeforeArmingResumesOnArming() async {
    let once = ResumeOnce<String, Never>()
    #expect(once.resume(with: .success("early")))
    #expect(!once.resume(with: .success("late")))
    let value = await withCheckedContinuation { once.arm($0) }
    #expect(value == "early")
  }

  @Test func aFailureIsThrown() async {
    let once = ResumeOnce<Int, any Error>()
    await #expect(throws: Refused()) {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
        once.arm(continuation)
        once.resume(with: .failure(Refused()))
        once.resume(with: .success(3))
      }
    }
  }

  /// Many racers on many threads: exactly one is told it was first, and the continuation is
  /// resumed with its value.
  @Test func racersResumeExactlyOnce() async throws {
    for _ in 0..<200 {
      let once = ResumeOnce<Int, Never>()
      let winners = MutexBox<[Int]>([])
      let value = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
        for racer in 0..<8 {
          Task.detached {
            if once.resume(with: .success(racer)) { winners.mutate { $0.append(racer) } }
          }
        }
        once.arm(continuation)
      }
      // The winner records itself after resuming.
      try await waitUntil("the winner recorded", poll: .microseconds(100)) { !winners.value.isEmpty }
      #expect(winners.value == [value])
    }
  }

  /// `finished(within:)` returns at its deadline when the source never finishes, and at once
  /// when it does.
  @Test func finishedWithinReturnsAtTheEarlierOfFinishingAndTheDeadline() async {
    struct Stuck: AdvertisementSource {
      let description = "stuck"
      func run(
        isolation: isolated (any Actor)?, started: () -> Void, deliver: ([SourceEvent]) async -> Void
      ) async throws {}
      func finished() async { try? await Task.sleep(for: .seconds(3600)) }
    }
    struct Prompt: AdvertisementSource {
      let description = "prompt"
      func run(
        isolation: isolated (any Actor)?, started: () -> Void, deliver: ([SourceEvent]) async -> Void
      ) async throws {}
    }
    let clock = ContinuousClock()
    let stuck = await clock.measure { await Stuck().finished(within: .milliseconds(200)) }
    #expect(stuck >= .milliseconds(200) && stuck < .seconds(60))
    let prompt = await clock.measure { await Prompt().finished(within: .seconds(3600)) }
    #expect(prompt < .seconds(60))
  }
}
