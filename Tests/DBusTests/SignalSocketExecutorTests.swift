import BeaconTestSupport
import DBus
import DBusTestSupport
import Foundation
import Synchronization
import Testing

/// The reader thread as a task executor (`SignalSocket.executor`): what prefers it runs on it, a
/// batch resumes its consumer there, and a task still preferring a stopped reader is not stranded.
@Suite(.privateBus, .serialized, .timeLimit(.minutes(2)))
struct SignalSocketExecutorTests {
  static let interface: InterfaceName = "org.example.Executor"
  static let readerThread = "dbus-signal-str"

  /// The calling thread's name, as the kernel has it.
  static var threadName: String {
    (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
      .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
  }

  static let sequence: @Sendable (borrowing WireSignal) -> UInt32? = { signal in
    guard signal.member(is: "Seq"), signal.signature(is: "u") else { return nil }
    var body = signal.body
    return body.uint32()
  }

  actor Consumer {
    var threads: Set<String> = []
    func record() { threads.insert(SignalSocketExecutorTests.threadName) }
  }

  /// A task's code runs on the reader thread while the task prefers it, after suspensions too,
  /// and elsewhere once it no longer does.
  @Test func whatPrefersTheReaderRunsOnIt() async throws {
    let bus = try PrivateBusTrait.bus()
    let socket = try SignalSocket(
      bus.busAddress, rules: [MatchRule(interface: Self.interface)], decode: Self.sequence)
    defer { socket.cancel() }
    let inside = await withTaskExecutorPreference(socket.executor) {
      let first = Self.threadName
      try? await Task.sleep(for: .milliseconds(5))
      return [first, Self.threadName]
    }
    #expect(inside == [Self.readerThread, Self.readerThread])
    let outside = await Task.detached { Self.threadName }.value
    #expect(outside != Self.readerThread)
  }

  /// A consumer parked on the reader resumes on the reader thread with each batch, and a default
  /// actor it calls from there runs there too: the thread that framed the batch runs it, and no
  /// other thread does.
  @Test func batchesResumeTheirConsumerOnTheReaderThread() async throws {
    let bus = try PrivateBusTrait.bus()
    let received = Mutex<(numbers: [UInt32], waiter: CheckedContinuation<Void, Never>?)>(([], nil))
    let socket = try SignalSocket(
      bus.busAddress, rules: [MatchRule(interface: Self.interface)], batchInterval: .milliseconds(5),
      decode: Self.sequence
    ) { batch in
      let waiter = received.withLock { state -> CheckedContinuation<Void, Never>? in
        for case .decoded(let number) in batch { state.numbers.append(number) }
        defer { state.waiter = nil }
        return state.waiter
      }
      waiter?.resume()
    }
    defer { socket.cancel() }
    let sender = try Connection(bus.busAddress)
    defer { sender.close() }
    let consumer = Consumer()
    let total = 300
    await withTaskExecutorPreference(socket.executor) {
      var next = 0
      while received.withLock({ $0.numbers.count }) < total {
        if next < total {
          for number in next..<min(total, next + 50) {
            try? sender.emit(
              path: "/seq", interface: Self.interface, member: "Seq", [.uint32(UInt32(number))])
          }
          next = min(total, next + 50)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
          let now = received.withLock { state -> Bool in
            if state.numbers.count >= next { return true }
            state.waiter = continuation
            return false
          }
          if now { continuation.resume() }
        }
        await consumer.record()
      }
    }
    #expect(received.withLock { $0.numbers } == (0..<total).map { UInt32($0) })
    #expect(await consumer.threads == [Self.readerThread])
  }

  /// Cancelling the socket from a job on its own reader thread neither deadlocks nor strands the
  /// task: its later jobs run on the global executor.
  @Test func aTaskOutlivesTheReaderItPrefers() async throws {
    let bus = try PrivateBusTrait.bus()
    let socket = try SignalSocket(
      bus.busAddress, rules: [MatchRule(interface: Self.interface)], decode: Self.sequence)
    var batches = socket.batches.makeAsyncIterator()
    let threads = await withTaskExecutorPreference(socket.executor) {
      let before = Self.threadName
      socket.cancel()
      // Suspends; resumed after the reader has stopped, so elsewhere.
      try? await Task.sleep(for: .milliseconds(20))
      return [before, Self.threadName]
    }
    #expect(threads.first == Self.readerThread)
    #expect(threads.last != Self.readerThread)
    // The stream ended: the reader is gone.
    #expect(await batches.next() == nil)
  }

  /// Backpressure: while `ready` says no, nothing is handed on, but the reader goes on draining
  /// the socket (the bus holds only about 170 signals) into its read-ahead, up to `readAhead`
  /// bytes, and counts what does not fit in `dropped`. Once `ready` says yes, what it kept
  /// arrives, in order, and what it kept and what it counted add up to what was sent.
  @Test func theReaderReadsAheadUntilTheConsumerIsReady() async throws {
    let bus = try PrivateBusTrait.bus()
    let state = Mutex<(batches: Int, numbers: [UInt32], ready: Bool)>((0, [], false))
    let dropped = EventCount()
    let socket = try SignalSocket(
      bus.busAddress, rules: [MatchRule(interface: Self.interface)], batchInterval: .milliseconds(5),
      decode: Self.sequence,
      deliver: { batch in
        state.withLock { state in
          state.batches += 1
          for case .decoded(let number) in batch { state.numbers.append(number) }
        }
      },
      ready: { state.withLock { $0.ready } }, readAhead: 64 << 10, dropped: dropped)
    defer { socket.cancel() }
    let sender = try Connection(bus.busAddress)
    defer { sender.close() }
    // Several times the read-ahead (a Seq signal is about 100 bytes).
    let total = 5_000
    for number in 0..<total {
      try sender.emit(path: "/seq", interface: Self.interface, member: "Seq", [.uint32(UInt32(number))])
    }
    // The reader reads past the bound while the consumer is not ready: it counts.
    try await waitUntil("the reader counting what does not fit") { dropped.count > 0 }
    #expect(state.withLock { $0.batches } == 0, "nothing is handed on while the consumer is not ready")
    state.withLock { $0.ready = true }
    try await waitUntil("every signal delivered or counted") {
      state.withLock({ $0.numbers.count }) + dropped.count >= total
    }
    let numbers = state.withLock { $0.numbers }
    #expect(numbers.count + dropped.count == total)
    // In order, from the first: what is dropped is what came past the bound, never what it kept.
    #expect(numbers.first == 0)
    #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "in order")
  }
}
