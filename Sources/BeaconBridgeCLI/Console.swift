import BeaconCore
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

  /// Every stdout write of the program goes through here. A write that fails (a closed pipe,
  /// a full disk, /dev/full) ends the program at once with exit 1 and one line on stderr, as
  /// coreutils do: output that did not arrive is never a success. (main ignores SIGPIPE, so a
  /// closed pipe is EPIPE here rather than a silent death by signal.)
  public func out(_ text: String) {
    if let code = StandardStreams.wasClosed(STDOUT_FILENO) ? EBADF : Self.write(text, to: STDOUT_FILENO) {
      Self.write("beaconbridge: cannot write to standard output: \(Self.reason(code))\n", to: STDERR_FILENO)
      // _exit: nothing is buffered, and no other thread's atexit work can hang the exit.
      _exit(ExitStatus.failure)
    }
  }

  /// A failed stderr write has nowhere to be reported; the exit status still tells. Control and
  /// bidi characters in a message (from a path, an argument, a payload) are escaped here, at the
  /// one door every message leaves by.
  public func err(_ text: String) {
    Self.write(text.escapingControlCharactersExceptNewlines, to: STDERR_FILENO)
  }

  /// Unbuffered, whole-string writes: lines reach a pipe as soon as they are made, and a short
  /// write or EINTR is retried. Returns the errno of a failed write, nil when all was written.
  @discardableResult
  static func write(_ text: String, to fd: Int32) -> Int32? {
    var text = text
    return text.withUTF8 { buffer -> Int32? in
      guard let base = buffer.baseAddress else { return nil }
      var offset = 0
      while offset < buffer.count {
        let n = Glibc.write(fd, base + offset, buffer.count - offset)
        if n > 0 {
          offset += n
        } else if n < 0 && errno == EINTR {
          continue
        } else {
          return n < 0 ? errno : EIO
        }
      }
      return nil
    }
  }

  /// A write's errno in plain words.
  static func reason(_ code: Int32) -> String {
    switch code {
    case EPIPE: return "the reading end of the pipe is closed"
    case ENOSPC: return "the disk is full"
    case EBADF: return "it is closed"
    case EIO: return "an input/output error"
    case EFBIG: return "the file is too large"
    case EDQUOT: return "the disk quota is exceeded"
    default: return String(cString: strerror(code)).lowercased()
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
