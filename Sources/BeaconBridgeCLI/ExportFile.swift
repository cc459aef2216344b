import BeaconCore
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Why an export could not be written, in words: the path, the cause and the fix.
struct ExportError: Error, CustomStringConvertible {
  var path: String
  var problem: String
  var fix: String
  var description: String { "cannot write \(path): \(problem); \(fix)" }
}

/// Writes a file the way `diagnose --export` needs: all or nothing, and never through a link.
///
/// The bytes go to a new temporary file in the target's directory (`O_CREAT|O_EXCL|O_NOFOLLOW`),
/// which is `fsync`ed and then renamed over the target; the directory is `fsync`ed too. A
/// failure (a full disk, a write error) removes the temporary file and leaves the target as it
/// was: no partial file, no empty one. A target that is a symbolic link or a directory is
/// refused, and so is any other file that is not a regular one (a FIFO, a device); `rename(2)`
/// replaces a link that appears later instead of following it.
enum ExportFile {
  typealias Writer = (Int32, UnsafeRawBufferPointer) -> Int

  static func write(
    _ data: Data, to path: String, writer: Writer = { Glibc.write($0, $1.baseAddress, $1.count) }
  )
    throws(ExportError)
  {
    var info = stat()
    if lstat(path, &info) == 0 {
      switch info.st_mode & S_IFMT {
      case S_IFLNK:
        throw ExportError(
          path: path, problem: "it is a symbolic link, and beaconbridge does not write through links",
          fix: "remove the link or choose another file name")
      case S_IFDIR:
        throw ExportError(path: path, problem: "it is a directory", fix: "name a file inside it")
      case S_IFREG: break
      default:
        // A FIFO or a device named like a bundle is someone's, not an old bundle to replace.
        throw ExportError(
          path: path, problem: "it is \(RegularFile.kind(info.st_mode)), not a regular file",
          fix: "choose another file name")
      }
    }
    let directory =
      (path as NSString).deletingLastPathComponent.isEmpty
      ? "." : (path as NSString).deletingLastPathComponent
    let name = (path as NSString).lastPathComponent
    var temporary = ""
    var fd: Int32 = -1
    for attempt in 0..<100 {
      temporary = "\(directory)/.\(name).\(getpid()).\(attempt).tmp"
      fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
      if fd >= 0 || errno != EEXIST { break }
    }
    guard fd >= 0 else { throw failure(path, directory: directory, errno: errno) }
    var ok = false
    defer {
      if !ok { unlink(temporary) }
    }
    // The errno that stopped the write, if any (0 when all bytes went out).
    let writeError: Int32 = data.withUnsafeBytes { all in
      var offset = 0
      while offset < all.count {
        let n = writer(fd, UnsafeRawBufferPointer(rebasing: all[offset...]))
        if n < 0 {
          if errno == EINTR { continue }
          return errno
        }
        if n == 0 { return ENOSPC }
        offset += n
      }
      return fsync(fd) == 0 ? 0 : errno
    }
    guard writeError == 0 else {
      close(fd)
      throw failure(path, directory: directory, errno: writeError)
    }
    guard close(fd) == 0 else { throw failure(path, directory: directory, errno: errno) }
    guard rename(temporary, path) == 0 else { throw failure(path, directory: directory, errno: errno) }
    ok = true
    // The rename itself survives a power cut once the directory is synced.
    let dirFD = open(directory, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC)
    if dirFD >= 0 {
      _ = fsync(dirFD)
      close(dirFD)
    }
  }

  static func words(_ code: Int32) -> String { String(cString: strerror(code)).lowercased() }

  /// errno in plain words, with the fix.
  static func failure(_ path: String, directory: String, errno code: Int32) -> ExportError {
    switch code {
    case ENOSPC:
      ExportError(
        path: path, problem: "the disk holding \(directory) is full; nothing was written",
        fix: "free some space there, or choose another directory with --export")
    case EDQUOT:
      ExportError(
        path: path, problem: "the disk quota for \(directory) is exceeded; nothing was written",
        fix: "free some space there, or choose another directory with --export")
    case EACCES, EPERM:
      ExportError(
        path: path, problem: "permission denied: this user cannot create files in \(directory)",
        fix: "choose a directory you can write to with --export, e.g. /tmp/bundle.tar.gz")
    case ENOENT:
      ExportError(
        path: path, problem: "the directory \(directory) does not exist",
        fix: "create it, or choose another directory with --export")
    case ENOTDIR:
      ExportError(
        path: path, problem: "a part of \(directory) is not a directory",
        fix: "correct the path given to --export")
    case EROFS:
      ExportError(
        path: path, problem: "\(directory) is on a read-only file system",
        fix: "choose a writable directory with --export")
    case EISDIR:
      ExportError(path: path, problem: "it is a directory", fix: "name a file inside it")
    case EIO:
      ExportError(
        path: path, problem: "the device holding \(directory) reported an input/output error",
        fix: "check the disk (dmesg), or choose another directory with --export")
    default:
      ExportError(
        path: path, problem: words(code),
        fix: "choose another file with --export")
    }
  }
}
