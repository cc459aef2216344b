import Foundation

/// What a finished program said: its exit status and both output streams.
public struct ProcessRun: Sendable {
  public var status: Int32
  public var stdout: String
  public var stderr: String
}

/// Runs `executable` to its end and collects both streams; the one process runner the tests use
/// for the real binary and for the tools around it (tar, python3, setpriv).
///
/// - `environment`: set on top of this process's environment; `removing`: names taken out of it.
/// - `stdin`: written, then closed; nil gives the program /dev/null.
///
/// Both streams are read at the same time, so a program that fills its stderr pipe while the test
/// reads stdout cannot deadlock. The waiting happens on a thread of its own (`onOwnThread`), not
/// on the caller's: a test that runs the binary holds none of the cooperative pool's threads
/// while it runs, however slow the program (the arm64 binary under qemu takes seconds to start).
public func runProcess(
  _ executable: String, _ arguments: [String], environment: [String: String] = [:], removing: [String] = [],
  stdin: String? = nil
) async throws -> ProcessRun {
  try await onOwnThread {
    try runProcessBlocking(executable, arguments, environment: environment, removing: removing, stdin: stdin)
  }
}

/// `runProcess` for test support that cannot await (a synchronous initialiser, a `defer`): the
/// same run, the calling thread blocked until the program ends. A test awaits `runProcess`.
public func runProcessBlocking(
  _ executable: String, _ arguments: [String], environment: [String: String] = [:], removing: [String] = [],
  stdin: String? = nil
) throws -> ProcessRun {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: executable)
  process.arguments = arguments
  var merged = ProcessInfo.processInfo.environment
  merged.merge(environment) { $1 }
  for name in removing { merged.removeValue(forKey: name) }
  process.environment = merged
  let out = Pipe()
  let err = Pipe()
  process.standardOutput = out
  process.standardError = err
  let input = stdin.map { _ in Pipe() }
  process.standardInput = input ?? FileHandle.nullDevice
  try process.run()
  let stderrText = ErrorText()
  let reader = Thread {
    stderrText.set(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
  }
  reader.start()
  if let stdin, let input {
    input.fileHandleForWriting.write(Data(stdin.utf8))
    try input.fileHandleForWriting.close()
  }
  let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  process.waitUntilExit()
  return ProcessRun(status: process.terminationStatus, stdout: stdout, stderr: stderrText.wait())
}

/// Runs `body`, a wait that blocks (for a child process, or a pipe read to its end), on a thread
/// of its own and awaits its result.
///
/// Swift Testing runs every test, synchronous ones included, on the cooperative pool, which has
/// as many threads as the machine has CPUs (two on the build machine). A test that blocks one of
/// them while a child runs starves every other test of it: under qemu, where each start of the
/// arm64 CLI takes seconds, the suites that start it many times held both threads for minutes and
/// the async tests behind them missed their waits.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    Thread { continuation.resume(with: Result { try body() }) }.start()
  }
}

extension Process {
  /// Waits until the program has ended, on a thread of its own (`onOwnThread`): the caller's
  /// thread stays free for other tests.
  public func exited() async {
    let process = UncheckedProcess(process: self)
    _ = try? await onOwnThread { process.process.waitUntilExit() }
  }
}

/// A started `Process` handed to the thread that waits for it; only `waitUntilExit` is called
/// there.
private struct UncheckedProcess: @unchecked Sendable {
  let process: Process
}

/// stderr's text, handed from the reader thread.
private final class ErrorText: @unchecked Sendable {
  private let done = DispatchSemaphore(value: 0)
  private var text = ""

  func set(_ value: String) {
    text = value
    done.signal()
  }

  func wait() -> String {
    done.wait()
    return text
  }
}
