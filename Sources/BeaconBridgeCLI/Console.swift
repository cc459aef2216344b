import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Where commands write. The real one is stdout/stderr; tests capture.
public protocol Console: Sendable {
  func out(_ text: String)
  func err(_ text: String)
  /// Whether stdout is a terminal (tables refresh in place only there).
  var isTerminal: Bool { get }
}

public struct StandardConsole: Console {
  public init() {}

  public func out(_ text: String) { Self.write(text, to: STDOUT_FILENO) }

  public func err(_ text: String) { Self.write(text, to: STDERR_FILENO) }

  /// Unbuffered, whole-string writes: lines reach a pipe as soon as they are made, and a short
  /// write or EINTR is retried. A closed pipe (EPIPE) drops the output rather than crashing.
  static func write(_ text: String, to fd: Int32) {
    var text = text
    text.withUTF8 { buffer in
      var offset = 0
      while offset < buffer.count {
        let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
        if n > 0 {
          offset += n
        } else if n < 0 && errno == EINTR {
          continue
        } else {
          return
        }
      }
    }
  }

  public var isTerminal: Bool {
    isatty(STDOUT_FILENO) == 1 && getenv("TERM").map { String(cString: $0) } != "dumb"
  }
}

/// A console that keeps what is written, for tests.
public final class CapturingConsole: Console {
  private let state = Mutex<(out: String, err: String)>(("", ""))
  public let isTerminal: Bool

  public init(isTerminal: Bool = false) {
    self.isTerminal = isTerminal
  }

  public func out(_ text: String) { state.withLock { $0.out += text } }
  public func err(_ text: String) { state.withLock { $0.err += text } }

  public var stdout: String { state.withLock { $0.out } }
  public var stderr: String { state.withLock { $0.err } }
}
