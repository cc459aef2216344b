import BeaconTestSupport
import Foundation
import Testing

@testable import BlueZ

/// `SessionInbox`, the session's input queue, holds the
/// stream's contract: order across producer threads, buffered elements delivered after `finish`,
/// yields after it dropped, and the consumer's cancellation ending `next`.
@Suite(.timeLimit(.minutes(1)))
struct SessionInboxTests {
  @Test func deliversInOrderThenNilAfterFinish() async {
    let inbox = SessionInbox<Int>()
    for i in 0..<5 { inbox.yield(i) }
    inbox.finish()
    inbox.yield(99)
    var got: [Int] = []
    while let value = await inbox.next() { got.append(value) }
    #expect(got == [0, 1, 2, 3, 4])
    #expect(await inbox.next() == nil)
  }

  /// Producers on their own threads (as the D-Bus reader is), the consumer parking and waking:
  /// every element arrives once, and each producer's in the order it yielded them.
  @Test func producerThreadsAndAParkedConsumer() async {
    let inbox = SessionInbox<(producer: Int, n: Int)>()
    let producers = 4
    let each = 5_000
    let consumer = Task {
      var last = Array(repeating: -1, count: producers)
      var count = 0
      var ordered = true
      while let (producer, n) = await inbox.next() {
        ordered = ordered && n == last[producer] + 1
        last[producer] = n
        count += 1
        if count == producers * each { break }
      }
      return (count, ordered)
    }
    let done = DispatchGroup()
    for producer in 0..<producers {
      done.enter()
      Thread.detachNewThread {
        for n in 0..<each {
          inbox.yield((producer, n))
          if n % 500 == 0 { usleep(1_000) }  // let the consumer park now and then
        }
        done.leave()
      }
    }
    let (count, ordered) = await consumer.value
    done.wait()
    #expect(count == producers * each)
    #expect(ordered)
  }

  @Test func cancellingTheConsumerEndsNext() async {
    let inbox = SessionInbox<Int>()
    let consumer = Task { await inbox.next() }
    // Whether it is parked yet or not, cancellation ends it with nil.
    consumer.cancel()
    #expect(await consumer.value == nil)
    // And the inbox stays ended, like a cancelled stream.
    inbox.yield(1)
    #expect(await inbox.next() == nil)
  }

  @Test func finishWakesAParkedConsumer() async throws {
    let inbox = SessionInbox<Int>()
    let consumer = Task { await inbox.next() }
    try await waitUntil("the consumer parked") { inbox.hasParkedConsumer }
    inbox.finish()
    #expect(await consumer.value == nil)
  }
}
