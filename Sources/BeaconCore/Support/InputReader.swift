#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Why an input could not be read, as one plain sentence naming it ("cannot read standard
/// input: it is closed", "cannot read /tmp: it is a directory").
public struct InputError: Error, Hashable, Sendable, CustomStringConvertible {
  /// "standard input" or the path.
  public var subject: String
  /// Why, in plain words: "it is closed", "permission denied".
  public var reason: String
  /// The errno of a failed open(2), read(2) or fstat(2), for callers whose sentence depends on it.
  public var code: Int32?
  /// What the path names when it is not a regular file ("a FIFO", "a directory").
  public var kind: String?
  public init(_ subject: String, _ reason: String, code: Int32? = nil, kind: String? = nil) {
    self.subject = subject
    self.reason = reason
    self.code = code
    self.kind = kind
  }
  public var description: String { "cannot read \(subject.escapingControlCharacters): \(reason)" }
}

/// The one way a path the caller gave is opened for reading: the configuration file (at start and
/// on SIGHUP), a scenario, a capture, a trip events file, a G-Zone payload, a token or TLS file.
///
/// open(2) with `O_NONBLOCK`, so that a FIFO with no writer or a device cannot stall the process
/// (a daemon in a vehicle must keep answering SIGTERM), then fstat(2) on that descriptor, and
/// anything but a regular file is refused with a sentence that says what it is ("it is a FIFO,
/// not a regular file"). The check and the read use the same descriptor: a file swapped in
/// between cannot be read unchecked.
public enum RegularFile {
  /// Opens `path` read-only. `followLinks: false` adds `O_NOFOLLOW` (a symbolic link is refused
  /// with ELOOP), for files whose owner and mode are checked (token files).
  /// Returns the descriptor, which the caller closes, and its `stat`.
  public static func open(_ path: String, followLinks: Bool = true) throws(InputError) -> (Int32, stat) {
    guard !path.isEmpty else { throw InputError("\"\"", "the file name is empty") }
    let flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (followLinks ? 0 : O_NOFOLLOW)
    var descriptor: Int32
    repeat { descriptor = Glibc.open(path, flags) } while descriptor < 0 && errno == EINTR
    guard descriptor >= 0 else {
      let code = errno
      throw InputError(path, SystemError.words(code, during: .reading), code: code)
    }
    var info = stat()
    guard fstat(descriptor, &info) == 0 else {
      let code = errno
      close(descriptor)
      throw InputError(path, SystemError.words(code, during: .reading), code: code)
    }
    guard info.st_mode & S_IFMT == S_IFREG else {
      close(descriptor)
      let what = kind(info.st_mode)
      throw InputError(
        path, what == "a directory" ? "it is a directory" : "it is \(what), not a regular file", kind: what)
    }
    return (descriptor, info)
  }

  /// What a file that is not a regular one is, for a sentence: "a FIFO", "a character device".
  public static func kind(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFREG: "a regular file"
    case S_IFDIR: "a directory"
    case S_IFIFO: "a FIFO"
    case S_IFSOCK: "a socket"
    case S_IFCHR: "a character device"
    case S_IFBLK: "a block device"
    case S_IFLNK: "a symbolic link"
    default: "not a regular file"
    }
  }
}

/// Reads an input (a file, or `-` for standard input) with open(2) and read(2), up to a size
/// limit, so that no input can trap (Foundation's `readDataToEndOfFile()` traps on a closed or
/// directory stdin) or grow the process without bound (`/dev/zero`). A path is opened by
/// `RegularFile.open`: anything but a regular file is refused. Standard input (`-`) may be a
/// pipe or a terminal and is read as a stream until its end; errno becomes plain words.
public final class InputReader {
  /// `standard input`, or the path.
  public let name: String
  private let fd: Int32
  private let owned: Bool
  /// Bytes read so far.
  private var consumed = 0

  /// Opens `path`; `-` is standard input.
  public init(path: String) throws(InputError) {
    if path == "-" {
      guard !StandardStreams.wasClosed(STDIN_FILENO) else {
        throw InputError("standard input", "it is closed")
      }
      name = "standard input"
      fd = STDIN_FILENO
      owned = false
    } else {
      name = path
      (fd, _) = try RegularFile.open(path)
      owned = true
    }
    var info = stat()
    guard fstat(fd, &info) == 0 else {
      let code = errno
      if owned { close(fd) }
      throw InputError(name, SystemError.words(code, during: .reading))
    }
    if (info.st_mode & S_IFMT) == S_IFDIR {
      if owned { close(fd) }
      throw InputError(name, "it is a directory")
    }
  }

  deinit { if owned { close(fd) } }

  /// Reads the whole input. Throws once more than `limit` bytes arrive (a regular file larger
  /// than `limit` is refused before it is read).
  public static func read(_ path: String, limit: Int) throws(InputError) -> [UInt8] {
    try InputReader(path: path).readToEnd(limit: limit)
  }

  /// Reads up to `count` bytes: fewer only at the end of the input.
  public func read(upTo count: Int) throws(InputError) -> [UInt8] {
    var bytes: [UInt8] = []
    try fill(&bytes, upTo: count)
    return bytes
  }

  /// Reads what is left, refusing an input of more than `limit` bytes in all (those read
  /// before count).
  public func readToEnd(limit: Int) throws(InputError) -> [UInt8] {
    var info = stat()
    if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int(info.st_size) > limit {
      throw tooLarge(limit)
    }
    var bytes: [UInt8] = []
    // One byte past the limit tells "exactly the limit" from "more".
    try fill(&bytes, upTo: max(0, limit + 1 - consumed))
    guard consumed <= limit else { throw tooLarge(limit) }
    return bytes
  }

  private func tooLarge(_ limit: Int) -> InputError {
    InputError(name, "it is larger than the \(Self.size(limit)) limit")
  }

  private func fill(_ bytes: inout [UInt8], upTo count: Int) throws(InputError) {
    let chunk = 64 * 1024
    var buffer = [UInt8](repeating: 0, count: chunk)
    while bytes.count < count {
      let want = min(chunk, count - bytes.count)
      let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, want) }
      if n > 0 {
        bytes.append(contentsOf: buffer[0..<n])
        consumed += n
      } else if n == 0 {
        return
      } else {
        let code = errno
        switch code {
        case EINTR: continue
        case EAGAIN:
          // A non-blocking descriptor inherited from the caller: wait until it is readable.
          var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
          _ = poll(&poller, 1, -1)
        default: throw InputError(name, SystemError.words(code, during: .reading))
        }
      }
    }
  }

  /// A byte count for messages: "16 MiB".
  public static func size(_ bytes: Int) -> String {
    bytes % (1 << 20) == 0
      ? "\(bytes >> 20) MiB" : bytes % 1024 == 0 ? "\(bytes >> 10) KiB" : "\(bytes) bytes"
  }
}

/// The three standard descriptors as the program found them.
///
/// A descriptor the caller closed (`<&-`, `>&-`) is a trap door: the next open(2) in the
/// process (the dispatch runtime's epoll descriptor, a database) takes its number, and reads
/// from "stdin" or writes to "stdout" would then reach that file. `claim()`, the first thing
/// `main` does, puts /dev/null on each closed one and remembers it, so that reading a closed
/// stdin or writing to a closed stdout is the plain error it should be.
public enum StandardStreams {
  nonisolated(unsafe) private static var closed: Set<Int32> = []

  /// Call once, first, before any thread starts.
  public static func claim() {
    for fd in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO] where fcntl(fd, F_GETFD) < 0 && errno == EBADF {
      let placeholder = open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY)
      if placeholder >= 0 && placeholder != fd {
        dup2(placeholder, fd)
        close(placeholder)
      }
      closed.insert(fd)
    }
  }

  /// Closes the placeholders `claim()` put on closed streams, for a program about to exec another
  /// that should see its streams as this one was given them.
  public static func unclaim() {
    for fd in closed { close(fd) }
    closed = []
  }

  /// Whether the caller started the program with `fd` closed.
  public static func wasClosed(_ fd: Int32) -> Bool { closed.contains(fd) }
}
