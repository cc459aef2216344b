import BeaconCore

#if canImport(Glibc)
  import Glibc
#endif

/// Why the state directory's lock could not be taken: another process owns the directory, or the
/// lock file cannot be made.
public struct StateLockError: Error, Hashable, Sendable, CustomStringConvertible {
  public var description: String
  /// The owner's PID, as its lock file says, when one holds the lock.
  public var ownerPID: Int32?
}

/// One owner per state directory: an `flock(2)` lock on `beaconbridge.lock` in it, held by the
/// daemon for its whole life and by each CLI command that writes the store while it writes.
///
/// Two daemons on one directory (on different buses, or one outside systemd) would both restore
/// the outbox and both post its batches; the second one is refused instead, with the first one's
/// PID, which the holder writes into the file. The kernel drops an `flock` when its holder dies,
/// so a crash leaves no stale lock, only a stale PID that the next holder overwrites.
public final class StateLock: Sendable {
  public static let fileName = "beaconbridge.lock"
  private let descriptor: Int32
  public let path: String

  private init(descriptor: Int32, path: String) {
    self.descriptor = descriptor
    self.path = path
  }

  /// Closing the descriptor releases the lock.
  deinit { close(descriptor) }

  /// Takes the lock of `directory`, which must exist (`StateDirectory.prepare`). `holder` names
  /// this process in the file ("beaconbridge run"). When another process holds it, waits up to
  /// `wait` (a CLI write waits out another one's short write; the daemon does not wait), then
  /// refuses, naming the holder's PID.
  public static func acquire(directory: String, holder: String, wait: Duration = .zero) throws(StateLockError)
    -> StateLock
  {
    let path = StateDirectory.path(directory, fileName)
    let shown = path.escapingControlCharacters
    // O_NOFOLLOW: a link planted in the directory must not make the lock truncate another file.
    var fd: Int32
    repeat {
      fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0o640)
    } while fd < 0 && errno == EINTR
    guard fd >= 0 else {
      let code = errno
      let why =
        code == ELOOP
        ? "it is a symbolic link" : code == ENOSPC ? "the disk is full" : SystemError.words(code)
      throw StateLockError(
        description:
          "cannot take the lock \(shown) of the state directory: \(why); to fix: remove it, or pass --state-dir with another directory"
      )
    }
    var info = stat()
    guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
      close(fd)
      throw StateLockError(
        description:
          "cannot take the lock \(shown) of the state directory: it is \(RegularFile.kind(info.st_mode)), not a regular file; to fix: remove it"
      )
    }
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: wait)
    while flock(fd, LOCK_EX | LOCK_NB) != 0 {
      let code = errno
      if code == EINTR { continue }
      guard code == EWOULDBLOCK else {
        close(fd)
        throw StateLockError(
          description: "cannot take the lock \(shown) of the state directory: \(SystemError.words(code))")
      }
      if clock.now < deadline {
        usleep(50_000)
        continue
      }
      let owner = Self.owner(fd)
      close(fd)
      let who = owner.map { "\($0.holder) (PID \($0.pid))" } ?? "another beaconbridge process"
      throw StateLockError(
        description:
          "the state directory \(directory.escapingControlCharacters) is in use by \(who.escapingControlCharacters); to fix: stop it first, or pass --state-dir with another directory",
        ownerPID: owner?.pid)
    }
    // Ours: say who holds it, for the next one refused.
    let line = Array("\(getpid()) \(holder)\n".utf8)
    _ = ftruncate(fd, 0)
    _ = line.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    return StateLock(descriptor: fd, path: path)
  }

  /// "PID holder" as the holder wrote it; nil when the file says nothing usable.
  static func owner(_ fd: Int32) -> (pid: Int32, holder: String)? {
    var buffer = [UInt8](repeating: 0, count: 256)
    let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
    guard n > 0 else { return nil }
    let text = String(decoding: buffer[0..<n], as: UTF8.self)
    let line = text.split(separator: "\n").first ?? ""
    let parts = line.split(separator: " ", maxSplits: 1)
    guard let first = parts.first, let pid = Int32(first), pid > 0 else { return nil }
    return (pid, parts.count > 1 ? String(parts[1]) : "beaconbridge")
  }
}
