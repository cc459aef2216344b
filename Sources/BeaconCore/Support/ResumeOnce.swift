import Synchronization

/// A continuation resumed once, by whichever of several racers comes first (an operation and its
/// deadline, say); later results are dropped. A result that comes before the continuation is
/// armed is kept, and resumes it as soon as it is.
///
/// The one "resume once" guard: a `CheckedContinuation` resumed twice traps, and one never
/// resumed leaks its task.
public final class ResumeOnce<Value: Sendable, Failure: Error>: Sendable {
  private struct State {
    var continuation: CheckedContinuation<Value, Failure>?
    /// The first result, kept until a continuation is armed.
    var result: Result<Value, Failure>?
    var resumed = false
  }
  private let state = Mutex(State())

  public init() {}

  /// Hands over the continuation to resume; resumes it now when a result has already come.
  public func arm(_ continuation: CheckedContinuation<Value, Failure>) {
    let early = state.withLock { state -> Result<Value, Failure>? in
      guard let result = state.result else {
        state.continuation = continuation
        return nil
      }
      state.result = nil
      return result
    }
    if let early { continuation.resume(with: early) }
  }

  /// Resumes the continuation with `result` unless another result came first. Returns whether
  /// this call was the first.
  @discardableResult
  public func resume(with result: Result<Value, Failure>) -> Bool {
    let (first, continuation) = state.withLock { state -> (Bool, CheckedContinuation<Value, Failure>?) in
      guard !state.resumed else { return (false, nil) }
      state.resumed = true
      guard let continuation = state.continuation else {
        state.result = result
        return (true, nil)
      }
      state.continuation = nil
      return (true, continuation)
    }
    continuation?.resume(with: result)
    return first
  }
}

extension ResumeOnce where Value == Void {
  /// `resume(with: .success(()))`.
  @discardableResult
  public func resume() -> Bool { resume(with: .success(())) }
}
