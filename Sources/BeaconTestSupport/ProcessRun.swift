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
/// reads stdout cannot deadlock.
public func runProcess(
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
