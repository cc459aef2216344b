import BeaconCore
import CCurl
import DBus
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// HTTP requests in a child process, so that libcurl and the TLS, Kerberos, LDAP and SSH
/// libraries it loads (about 8 MB of RSS once OpenSSL is initialised) never enter the daemon
/// (docs/PERFORMANCE.md, "Where the daemon's memory goes").
///
/// The daemon's executable sets this up at start (`runTransfers(in:)`); each request then
/// spawns `beaconbridged --http-transfer`, which reads the request on stdin, runs the very same
/// `CurlClient.Transfer` (libcurl's connect and total timeouts, TLS files, proxy from the
/// environment) and writes the reply or libcurl's error on stdout. Cancelling the caller kills
/// the child (the same "cancelled" error as in process), and the child dies with the daemon
/// (PR_SET_PDEATHSIG). Without the setting (tests, the CLI), requests run in process as before.
enum CurlTransferProcess {
  static let argument = "--http-transfer"
  private static let executable = Mutex<String?>(nil)

  /// Runs every later request through `path --http-transfer`.
  static func runTransfers(in path: String) { executable.withLock { $0 = path } }

  static var configuredExecutable: String? { executable.withLock { $0 } }

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
    let request: [UInt8]
    var continuation: CheckedContinuation<Result<HTTPResponse, HTTPTransferError>, Never>?
    let pid = Atomic<Int32>(0)
    let cancelled = Atomic<Bool>(false)

    init(executable: String, request: [UInt8]) {
      self.executable = executable
      self.request = request
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
        strdup(executable), strdup(CurlTransferProcess.argument), nil,
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
            "cannot run \(executable) \(CurlTransferProcess.argument): \(String(cString: strerror(spawned)))")
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
      guard let result = TransferCoding.decodeResult(reply) else {
        return .failure(Self.error("the HTTP transfer process ended without a reply (wait status \(status))"))
      }
      return result
    }
  }

  // MARK: The child's side

  /// `beaconbridged --http-transfer`: one request from stdin, its result to stdout. Returns the
  /// exit status.
  static func serve() -> Int32 {
    bb_die_with_parent()
    guard let request = TransferCoding.decodeRequest(readAll(STDIN_FILENO)) else {
      _ = writeAll(
        STDERR_FILENO,
        Array(
          "beaconbridged \(argument): stdin held no transfer request (this is the daemon's own HTTP child, not a command: use 'beaconbridge run')\n"
            .utf8))
      return 64
    }
    let result = CurlClient.performHere(request)
    return writeAll(STDOUT_FILENO, TransferCoding.encode(result)) ? 0 : 1
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

/// The request and the result on the pipes: length-prefixed fields, little-endian.
enum TransferCoding {
  struct Writer {
    var bytes: [UInt8] = []
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    mutating func data(_ value: [UInt8]) {
      u64(UInt64(value.count))
      bytes += value
    }
    mutating func string(_ value: String) { data(Array(value.utf8)) }
    mutating func optional(_ value: String?) {
      u64(value == nil ? 0 : 1)
      if let value { string(value) }
    }
  }

  struct Reader {
    let bytes: [UInt8]
    var at = 0
    mutating func u64() -> UInt64? {
      guard at + 8 <= bytes.count else { return nil }
      var value: UInt64 = 0
      for i in 0..<8 { value |= UInt64(bytes[at + i]) << (8 * i) }
      at += 8
      return value
    }
    mutating func data() -> [UInt8]? {
      guard let count = u64(), count <= UInt64(bytes.count - at) else { return nil }
      defer { at += Int(count) }
      return Array(bytes[at..<at + Int(count)])
    }
    mutating func string() -> String? { data().map { String(decoding: $0, as: UTF8.self) } }
    mutating func optional() -> String?? {
      guard let flag = u64() else { return nil }
      if flag == 0 { return .some(nil) }
      guard let value = string() else { return nil }
      return .some(value)
    }
  }

  static func encode(_ request: HTTPRequest) -> [UInt8] {
    var w = Writer()
    w.u64(request.method == .post ? 1 : 0)
    w.string(request.url)
    w.u64(UInt64(request.headers.count))
    for header in request.headers { w.string(header) }
    w.data(request.body)
    w.u64(request.timeout.bitPattern)
    w.optional(request.tls.caFile)
    w.optional(request.tls.certFile)
    w.optional(request.tls.keyFile)
    return w.bytes
  }

  static func decodeRequest(_ bytes: [UInt8]) -> HTTPRequest? {
    var r = Reader(bytes: bytes)
    guard let method = r.u64(), let url = r.string(), let count = r.u64(), count < 10_000 else { return nil }
    var headers: [String] = []
    for _ in 0..<count {
      guard let header = r.string() else { return nil }
      headers.append(header)
    }
    guard let body = r.data(), let timeout = r.u64(), let ca = r.optional(), let cert = r.optional(),
      let key = r.optional(), r.at == bytes.count
    else { return nil }
    return HTTPRequest(
      method: method == 1 ? .post : .get, url: url, headers: headers, body: body,
      timeout: Double(bitPattern: timeout), tls: TLSFiles(caFile: ca, certFile: cert, keyFile: key))
  }

  static func encode(_ result: Result<HTTPResponse, HTTPTransferError>) -> [UInt8] {
    var w = Writer()
    switch result {
    case .success(let response):
      w.u64(0)
      w.u64(UInt64(bitPattern: Int64(response.status)))
      w.u64(UInt64(response.headers.count))
      for (name, value) in response.headers.sorted(by: { $0.key < $1.key }) {
        w.string(name)
        w.string(value)
      }
      w.data(response.body)
    case .failure(let error):
      w.u64(1)
      w.u64(UInt64(error.code))
      w.string(error.message)
    }
    return w.bytes
  }

  static func decodeResult(_ bytes: [UInt8]) -> Result<HTTPResponse, HTTPTransferError>? {
    var r = Reader(bytes: bytes)
    switch r.u64() {
    case 0:
      guard let status = r.u64(), let count = r.u64(), count < 100_000 else { return nil }
      var headers: [String: String] = [:]
      for _ in 0..<count {
        guard let name = r.string(), let value = r.string() else { return nil }
        headers[name] = value
      }
      guard let body = r.data(), r.at == bytes.count else { return nil }
      return .success(HTTPResponse(status: Int(Int64(bitPattern: status)), headers: headers, body: body))
    case 1:
      guard let code = r.u64(), let message = r.string(), r.at == bytes.count else { return nil }
      return .failure(HTTPTransferError(code: UInt32(truncatingIfNeeded: code), message: message))
    default:
      return nil
    }
  }
}

/// What the daemon's executable calls (see `CurlTransferProcess`).
public enum HTTPTransfers {
  /// The argument that makes the daemon's executable serve one transfer.
  public static let childArgument = CurlTransferProcess.argument

  /// From now on, HTTP requests run in child processes of this executable (/proc/self/exe).
  /// Returns false, and requests stay in process, when the executable cannot be named.
  ///
  /// The child is spawned from `/proc/self/exe`, not from the path it was started as: after a
  /// package upgrade has replaced the file, the running daemon's children are still its own
  /// version (the same pipe format), until systemd restarts it.
  ///
  /// `BEACONBRIDGE_TRANSFER_EXECUTABLE` names another executable for the children: only for a
  /// daemon run under valgrind (`make code-order`), where /proc/self/exe is valgrind itself.
  @discardableResult
  public static func useChildProcesses() -> Bool {
    if let named = getenv(transferExecutableVariable), named.pointee != 0 {
      CurlTransferProcess.runTransfers(in: String(cString: named))
      return true
    }
    guard access("/proc/self/exe", X_OK) == 0 else { return false }
    CurlTransferProcess.runTransfers(in: "/proc/self/exe")
    return true
  }

  /// See `useChildProcesses()`.
  public static let transferExecutableVariable = "BEACONBRIDGE_TRANSFER_EXECUTABLE"

  /// Serves one transfer on stdin/stdout; returns the exit status.
  public static func serveChild() -> Int32 { CurlTransferProcess.serve() }
}
