import BeaconCore
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// Where the daemon keeps its store (docs/DESIGN.md, Contracts): `--state-dir`, else
/// `BEACONBRIDGE_STATE_DIR`, else systemd's `STATE_DIRECTORY`, else `/var/lib/beaconbridge`.
public enum StateDirectory {
  public static let defaultPath = "/var/lib/beaconbridge"

  public static func resolve(option: String?, environment: [String: String]) -> String {
    if let option, !option.isEmpty { return option }
    if let explicit = environment["BEACONBRIDGE_STATE_DIR"], !explicit.isEmpty { return explicit }
    // systemd may list several directories, separated by colons; ours is the first.
    if let systemd = environment["STATE_DIRECTORY"], let first = systemd.split(separator: ":").first {
      return String(first)
    }
    return defaultPath
  }
}

/// Why the state directory cannot be used, and the fix: one sentence each for a path that is
/// not a directory, a missing or non-directory parent, a permission denied, a read-only or full
/// file system.
public struct StateDirectoryError: Error, Hashable, Sendable, CustomStringConvertible {
  public var path: String
  public var problem: String
  public var fix: String

  public var description: String { "the state directory \(path) \(problem); to fix: \(fix)" }
}

extension StateDirectory {
  /// `name` in `directory` (what `NSString.appendingPathComponent` gave, without Foundation).
  static func path(_ directory: String, _ name: String) -> String {
    directory.isEmpty ? name : directory.hasSuffix("/") ? directory + name : directory + "/" + name
  }

  /// The folder `path` is in: "/a/b" for "/a/b/c", "/" for "/c", "" for "c".
  static func parent(of path: String) -> String {
    var trimmed = Substring(path)
    while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
    guard let slash = trimmed.lastIndex(of: "/") else { return "" }
    return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
  }

  /// Creates the directory (and its missing parents, as `mkdir -p`), then checks that this
  /// process can create files in it.
  public static func prepare(_ path: String) throws(StateDirectoryError) {
    let absolute = path.hasPrefix("/")
    var built = absolute ? "" : "."
    for component in path.split(separator: "/") {
      built += "/" + component
      var info = stat()
      if stat(built, &info) == 0 {
        guard info.st_mode & S_IFMT == S_IFDIR else {
          throw built == normalized(path)
            ? StateDirectoryError(
              path: path, problem: "is \(kind(info.st_mode)), not a directory",
              fix: "move it aside, or pass --state-dir with a directory")
            : StateDirectoryError(
              path: path,
              problem: "cannot be created: its parent \(built) is \(kind(info.st_mode)), not a directory",
              fix: "correct the path, or pass --state-dir with a directory")
        }
        continue
      }
      let statError = errno
      guard statError == ENOENT else { throw failure(path, at: built, errno: statError) }
      if mkdir(built, 0o750) != 0, errno != EEXIST { throw failure(path, at: built, errno: errno) }
    }
    // Writable means: this user may create files in it (the store and its -wal and -shm).
    if access(path, W_OK | X_OK) != 0 { throw failure(path, at: path, errno: errno) }
  }

  static func normalized(_ path: String) -> String {
    (path.hasPrefix("/") ? "/" : "./") + path.split(separator: "/").joined(separator: "/")
  }

  static func failure(_ path: String, at component: String, errno code: Int32) -> StateDirectoryError {
    let which = component == normalized(path) || component == path ? "" : " (at \(component))"
    switch code {
    case EACCES, EPERM:
      var owner = ""
      var info = stat()
      let exists = stat(path, &info) == 0
      if exists {
        owner =
          ", owned by \(userName(info.st_uid)):\(TokenFile.groupName(info.st_gid)) with mode "
          + String(info.st_mode & 0o7777, radix: 8).leftPadded(to: 4)
      }
      let what = exists ? "is not writable by" : "cannot be created by"
      return StateDirectoryError(
        path: path, problem: "\(what) \(userName(geteuid())): permission denied\(which)\(owner)",
        fix:
          "run as root or as a member of the beaconbridge group, or pass --state-dir with a directory you own"
      )
    case EROFS:
      return StateDirectoryError(
        path: path, problem: "is on a read-only file system\(which)",
        fix: "pass --state-dir with a directory on a writable file system")
    case ENOSPC, EDQUOT:
      return StateDirectoryError(
        path: path, problem: "cannot be created: the disk is full\(which)", fix: "free space on it"
      )
    case ENOTDIR:
      return StateDirectoryError(
        path: path, problem: "cannot be created: a part of its path is not a directory\(which)",
        fix: "correct the path, or pass --state-dir with a directory")
    case ENOENT:
      return StateDirectoryError(
        path: path, problem: "cannot be created: its parent does not exist\(which)",
        fix: "create the parent directory first, or pass --state-dir with a directory")
    default:
      return StateDirectoryError(
        path: path, problem: "cannot be used: \(TokenFile.words(code))\(which)",
        fix: "pass --state-dir with another directory")
    }
  }

  static func kind(_ mode: mode_t) -> String {
    mode & S_IFMT == S_IFREG ? "a file" : RegularFile.kind(mode)
  }

  static func userName(_ uid: uid_t) -> String {
    if let user = getpwuid(uid), let name = user.pointee.pw_name { return String(cString: name) }
    return "uid \(uid)"
  }
}

extension StateDirectory {
  /// For commands that only read (`pairs`, `doctor`, `diagnose`): checks that the directory and,
  /// with `store: true`, the store in it exist, creating nothing. A mistyped `--state-dir` is
  /// "not found", never an empty store made on the spot.
  public static func requireExisting(_ path: String, store: Bool) throws(StateDirectoryError) {
    var info = stat()
    guard stat(path, &info) == 0 else {
      let code = errno
      guard code == ENOENT || code == ENOTDIR else { throw failure(path, at: path, errno: code) }
      // The nearest part of the path that exists, when it is not a directory, is the cause.
      var part = parent(of: path)
      while !part.isEmpty, part != "/", stat(part, &info) != 0 { part = parent(of: part) }
      if !part.isEmpty, stat(part, &info) == 0, info.st_mode & S_IFMT != S_IFDIR {
        throw StateDirectoryError(
          path: path, problem: "was not found: its parent \(part) is \(kind(info.st_mode)), not a directory",
          fix: "correct the path, or pass --state-dir with the daemon's state directory")
      }
      throw StateDirectoryError(
        path: path, problem: "was not found",
        fix: "pass --state-dir with the daemon's state directory, or start the daemon once to create it")
    }
    guard info.st_mode & S_IFMT == S_IFDIR else {
      throw StateDirectoryError(
        path: path, problem: "is \(kind(info.st_mode)), not a directory",
        fix: "pass --state-dir with the daemon's state directory")
    }
    guard store else { return }
    let file = self.path(path, Store.fileName)
    guard stat(file, &info) == 0 else {
      throw StateDirectoryError(
        path: path, problem: "holds no store: \(file) was not found",
        fix: "pass --state-dir with the daemon's state directory, or start the daemon once to create it")
    }
  }
}
