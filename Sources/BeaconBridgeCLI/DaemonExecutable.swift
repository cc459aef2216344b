import BeaconCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// `beaconbridged`, the daemon's own executable, which `beaconbridge run` replaces itself with
/// (same process: systemd's main PID, NOTIFY_SOCKET and signals are unchanged). It links only
/// the daemon's modules, without Foundation and ICU, to keep the daemon's memory small
/// (docs/PERFORMANCE.md, "Where the daemon's memory goes").
///
/// Where it is looked for, next to this binary's real path: the same folder (a build tree,
/// `.build/debug`), then `../lib/beaconbridge/` (installed: /usr/bin/beaconbridge and
/// /usr/lib/beaconbridge/beaconbridged).
enum DaemonExecutable {
  static let name = "beaconbridged"

  /// The candidates, in order, for a CLI binary at `executable`.
  static func candidates(forCLIAt executable: String) -> [String] {
    let folder = executable.lastIndex(of: "/").map { String(executable[..<$0]) } ?? "."
    return ["\(folder)/\(name)", "\(folder)/../lib/beaconbridge/\(name)"]
  }

  /// This process's executable (/proc/self/exe), or argv[0] when /proc is not there.
  static func currentExecutable() -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    if count > 0 { return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
    return CommandLine.arguments.first ?? name
  }

  /// The daemon's `GLIBC_TUNABLES`, given the caller's: glibc's per-thread caches of freed
  /// blocks (tcache) turned off, unless the caller sets their size. Each thread's cache keeps up
  /// to seven freed blocks of each small size wherever they lie; after a flood of random
  /// addresses they lay all over the heap, each keeping a page resident that `malloc_trim`
  /// cannot hand back (docs/PERFORMANCE.md, "The memory rows"). A tunable is read only as a
  /// process starts, so it is set for the exec; the daemon allocates little per advertisement.
  static func tunables(_ given: String?) -> String {
    let setting = "glibc.malloc.tcache_count=0"
    guard let given, !given.isEmpty else { return setting }
    if given.split(separator: ":").contains(where: { $0.hasPrefix("glibc.malloc.tcache_count=") }) {
      return given
    }
    return given + ":" + setting
  }

  /// Replaces this process with the daemon; returns only on failure, with the message to print.
  static func exec(arguments: [String]) -> String {
    let candidates = candidates(forCLIAt: currentExecutable())
    guard let path = candidates.first(where: { access($0, X_OK) == 0 }) else {
      return
        "the daemon's executable \(name) is missing (looked for \(candidates.joined(separator: " and "))); "
        + "reinstall beaconbridge, or build it with 'swift build --product \(name)'"
    }
    // The caller is a Swift concurrency thread, whose signal mask libdispatch has filled: exec
    // keeps the mask, so clear it, and give the daemon the standard streams as they were given.
    var empty = sigset_t()
    sigemptyset(&empty)
    pthread_sigmask(SIG_SETMASK, &empty, nil)
    StandardStreams.unclaim()
    setenv("GLIBC_TUNABLES", tunables(getenv("GLIBC_TUNABLES").map { String(cString: $0) }), 1)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    execv(path, argv)
    let reason = SystemError.words(errno)
    StandardStreams.claim()
    return "cannot run the daemon \(path): \(reason)"
  }
}
