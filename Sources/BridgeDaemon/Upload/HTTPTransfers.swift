import BeaconCore
import CCurl
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Which executable serves HTTP transfers (`CurlTransferProcess`), and its child side.
public enum HTTPTransfers {
  /// The argument that makes the daemon's executable serve one transfer.
  public static let childArgument = CurlTransferProcess.argument

  private static let configured = Mutex<String?>(nil)

  /// The daemon: its own executable serves its transfers. The child is spawned from
  /// `/proc/self/exe`, not from the path it was started as: after a package upgrade has replaced
  /// the file, the running daemon's children are still its own version (the same pipe format),
  /// until systemd restarts it.
  ///
  /// `BEACONBRIDGE_TRANSFER_EXECUTABLE` names another executable for the children: only for a
  /// daemon run under valgrind (`make code-order`) or qemu-aarch64 (`make test-arm64`), where
  /// /proc/self/exe is the emulator itself.
  public static func useChildProcesses() {
    if let named = getenv(transferExecutableVariable), named.pointee != 0 {
      configured.withLock { $0 = String(cString: named) }
    } else {
      configured.withLock { $0 = "/proc/self/exe" }
    }
  }

  /// See `useChildProcesses()`.
  public static let transferExecutableVariable = "BEACONBRIDGE_TRANSFER_EXECUTABLE"

  /// The executable each request spawns: the one `useChildProcesses()` set, else the one
  /// `BEACONBRIDGE_TRANSFER_EXECUTABLE` names (an arm64 CLI or test runner under qemu-aarch64,
  /// whose neighbour cannot be run without it), else the `beaconbridged` beside this process's
  /// executable (the CLI, and the package's tests, which run in a test runner in the same build
  /// directory). Nil when there is none.
  static var executable: String? {
    if let set = configured.withLock({ $0 }) { return set }
    if let named = getenv(transferExecutableVariable), named.pointee != 0 { return String(cString: named) }
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard count > 0 else { return nil }
    let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard let slash = path.lastIndex(of: "/") else { return nil }
    // The same folder (a build tree), then where the package installs it beside /usr/bin.
    let folder = String(path[...slash])
    return [folder + "beaconbridged", folder + "../lib/beaconbridge/beaconbridged"].first {
      access($0, X_OK) == 0
    }
  }

  /// The exit status of the child that `arguments` (the process's) ask for: a transfer
  /// (`--http-transfer`) or a URL check (`--check-url`); nil for the daemon itself.
  public static func serveChild(arguments: [String]) -> Int32? {
    guard arguments.count == 2 else { return nil }
    switch arguments[1] {
    case childArgument: return serve()
    case URLCheck.childArgument:
      bb_die_with_parent()
      return URLCheck.serve()
    default: return nil
    }
  }

  /// `beaconbridged --http-transfer`: one request from stdin, its result to stdout. Returns the
  /// exit status.
  static func serve() -> Int32 {
    bb_die_with_parent()
    guard let request = TransferCoding.decodeRequest(CurlTransferProcess.readAll(STDIN_FILENO)) else {
      _ = CurlTransferProcess.writeAll(
        STDERR_FILENO,
        Array(
          "beaconbridged \(childArgument): stdin held no transfer request (this is the daemon's own HTTP child, not a command: use 'beaconbridge run')\n"
            .utf8))
      return 64
    }
    let result = CurlClient.performHere(request)
    return CurlTransferProcess.writeAll(STDOUT_FILENO, TransferCoding.encode(result)) ? 0 : 1
  }
}
