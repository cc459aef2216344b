import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What a `waitUntil` that ran out throws, after recording the issue at the caller's line.
public struct WaitTimedOut: Error, CustomStringConvertible {
  public let description: String
}

/// Waits until `condition` holds, polling it every `poll`. When `timeout` passes first it records
/// an issue at the caller's line naming what it waited for, and throws `WaitTimedOut`, so that the
/// test stops there instead of going on as if it had happened.
///
/// The one wait of the test suites. The timeout is a hang guard, not a measurement: 60 s by
/// default, since in the parallel suite a test can wait over 10 s for a thread. A test that
/// measures a time takes the clock itself. A test that checks that something does *not* happen
/// waits for a later event it can observe (a counter, a test clock's sleepers), never a time.
public func waitUntil(
  _ what: @autoclosure () -> String,
  timeout: Duration = .seconds(60),
  poll: Duration = .milliseconds(10),
  sourceLocation: SourceLocation = #_sourceLocation,
  _ condition: () async throws -> Bool
) async throws {
  let deadline = ContinuousClock.now + timeout
  while try await !condition() {
    guard ContinuousClock.now < deadline else { throw timedOut(what(), after: timeout, at: sourceLocation) }
    try await Task.sleep(for: poll)
  }
}

/// `waitUntil` for test support that cannot await (a synchronous initialiser that starts a
/// process and waits until it is ready): the same hang guard, issue and `WaitTimedOut`, the
/// calling thread blocked between polls.
public func waitUntilBlocking(
  _ what: @autoclosure () -> String,
  timeout: Duration = .seconds(60),
  poll: Duration = .milliseconds(10),
  sourceLocation: SourceLocation = #_sourceLocation,
  _ condition: () throws -> Bool
) throws {
  let deadline = ContinuousClock.now + timeout
  while try !condition() {
    guard ContinuousClock.now < deadline else { throw timedOut(what(), after: timeout, at: sourceLocation) }
    usleep(UInt32(poll / .microseconds(1)))
  }
}

/// Records the issue at the waiting line and makes the error that stops the test there.
private func timedOut(_ what: String, after timeout: Duration, at sourceLocation: SourceLocation)
  -> WaitTimedOut
{
  let message = "timed out after \(timeout) waiting for: \(what)"
  Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
  return WaitTimedOut(description: message)
}
