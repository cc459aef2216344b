import BeaconCore
import CCurl
import DBus
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// HTTP requests in a child process, the one way libcurl is kept out of the daemon: libcurl and
/// the TLS, Kerberos, LDAP and SSH libraries it loads (about 8 MB of RSS once OpenSSL is
/// initialised) live only in the child, which exits after its request (docs/PERFORMANCE.md,
/// "Where the daemon's memory goes").
///
/// Each request spawns `beaconbridged --http-transfer` (`HTTPTransfers.executable`), which reads
/// the request on stdin, runs `CurlClient.Transfer` (libcurl's connect and total timeouts, TLS
/// files, proxy from the environment) and writes the reply or libcurl's error on stdout.
/// Cancelling the caller kills the child ("cancelled"), and the child dies with the daemon
/// (PR_SET_PDEATHSIG).
enum CurlTransferProcess {
  static let argument = "--http-transfer"

  // MARK: The daemon's side

  static func perform(_ request: HTTPRequest, executable: String) async -> Result<
    HTTPResponse, HTTPTransferError
  > {
    let child = Child(executable: executable, request: TransferCoding.encode(request))
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        child.continuation = continuation
        child.start()
      }
    } onCancel: {
      child.cancel()
    }
  }

  /// One child process, driven from a thread of its own (which also outlives the child, as
  /// PR_SET_PDEATHSIG needs: it fires when the thread that spawned the child ends).
  final class Child: @unchecked Sendable {
    let executable: String
    /// `--http-transfer`, or `--check-url` (`URLCheck`).
    let argument: String
    let request: [UInt8]
    var continuation: CheckedContinuation<Result<HTTPResponse, HTTPTransferError>, Never>?
    let pid = Atomic<Int32>(0)
    let cancelled = Atomic<Bool>(false)

    init(executable: String, request: [UInt8], argument: String = CurlTransferProcess.argument) {
      self.executable = executable
      self.request = request
      self.argument = argument
    }

    func cancel() {
      cancelled.store(true, ordering: .sequentiallyConsistent)
      let child = pid.load(ordering: .sequentiallyConsistent)
      if child > 0 { kill(child, SIGKILL) }
    }

    func start() {
      // Without a thread, the transfer runs on the caller's.
      if OSThread.start({ [self] in continuation?.resume(returning: run()) }) != 0 {
        continuation?.resume(returning: run())
      }
    }

    static func error(_ message: String) -> HTTPTransferError {
      HTTPTransferError(code: CURLE_FAILED_INIT.rawValue, message: message)
    }

    /// Held from creating a child's pipes until it is spawned, so that no other child inherits
    /// them before they are close-on-exec (Swift's Glibc has no pipe2).
    static let spawning = Mutex(())

    func run() -> Result<HTTPResponse, HTTPTransferError> {
      Self.spawning.withLock { _ in spawn() }.flatMap { child, input, output in exchange(child, input, output)
      }
    }

    /// Creates the pipes and the child; returns its pid, the write end of its stdin and the read
    /// end of its stdout.
    func spawn() -> Result<(pid_t, Int32, Int32), HTTPTransferError> {
      var input: [Int32] = [-1, -1]
      var output: [Int32] = [-1, -1]
      guard pipe(&input) == 0 else { return .failure(Self.error("no pipe (errno \(errno))")) }
      guard pipe(&output) == 0 else {
        close(input[0])
        close(input[1])
        return .failure(Self.error("no pipe (errno \(errno))"))
      }
      for fd in input + output { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
      var actions = posix_spawn_file_actions_t()
      posix_spawn_file_actions_init(&actions)
      defer { posix_spawn_file_actions_destroy(&actions) }
      posix_spawn_file_actions_adddup2(&actions, input[0], STDIN_FILENO)
      posix_spawn_file_actions_adddup2(&actions, output[1], STDOUT_FILENO)
      var child: pid_t = 0
      let argv: [UnsafeMutablePointer<CChar>?] = [
        strdup(executable), strdup(argument), nil,
      ]
      defer { for pointer in argv { free(pointer) } }
      // The child starts with no signal blocked and the stop signals at their defaults: the
      // daemon holds them for its SignalStream, and a pool thread's mask is nearly full.
      var attributes = posix_spawnattr_t()
      posix_spawnattr_init(&attributes)
      defer { posix_spawnattr_destroy(&attributes) }
      var none = sigset_t()
      sigemptyset(&none)
      var stops = sigset_t()
      sigemptyset(&stops)
      for number in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&stops, number) }
      posix_spawnattr_setsigmask(&attributes, &none)
      posix_spawnattr_setsigdefault(&attributes, &stops)
      posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
      let spawned = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
      close(input[0])
      close(output[1])
      guard spawned == 0 else {
        close(input[1])
        close(output[0])
        return .failure(
          Self.error(
            "cannot run \(executable) \(argument): \(SystemError.words(spawned))")
        )
      }
      return .success((child, input[1], output[0]))
    }

    /// Sends the request, reads the reply to its end and reaps the child.
    func exchange(_ child: pid_t, _ input: Int32, _ output: Int32) -> Result<HTTPResponse, HTTPTransferError>
    {
      pid.store(child, ordering: .sequentiallyConsistent)
      if cancelled.load(ordering: .sequentiallyConsistent) { kill(child, SIGKILL) }
      // The child reads all of its stdin before it writes: write, close, then read to the end.
      _ = writeAll(input, request)
      close(input)
      let reply = readAll(output)
      close(output)
      var status: Int32 = 0
      while waitpid(child, &status, 0) < 0 && errno == EINTR {}
      if cancelled.load(ordering: .sequentiallyConsistent) {
        return .failure(HTTPTransferError(code: CURLE_ABORTED_BY_CALLBACK.rawValue, message: "cancelled"))
      }
      guard let result = TransferCoding.decodeResult(reply) else { return .failure(withoutReply(status)) }
      return result
    }

    /// Why the child gave no reply, from its wait status. Exit status 127 is a child that could not
    /// run the program: where the spawn cannot report a failed exec to the parent (qemu-user runs
    /// the child of a vfork as a fork), the child exits 127 instead, so it is worded as the
    /// spawn's own failure is.
    func withoutReply(_ status: Int32) -> HTTPTransferError {
      let signal = status & 0x7f
      let code = (status >> 8) & 0xff
      if signal == 0, code == 127 {
        return Self.error("cannot run \(executable) \(argument): it exited with status 127 before replying")
      }
      let how = signal == 0 ? "it exited with status \(code)" : "it was killed by signal \(signal)"
      return Self.error("the HTTP transfer process ended without a reply: \(how)")
    }
  }

  static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
      let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
      if written < 0 && errno == EINTR { continue }
      guard written > 0 else { return false }
      offset += written
    }
    return true
  }

  static func readAll(_ fd: Int32) -> [UInt8] {
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { return out }
      out += buffer[..<count]
    }
  }
}
