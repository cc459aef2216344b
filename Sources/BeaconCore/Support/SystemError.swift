#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// errno in the words a user reads: one wording for every message the CLI and the daemon write
/// about a failed system call (`cannot read standard input: it is closed`).
public enum SystemError {
  /// What the failed call was doing. The errnos a user meets while reading or writing get
  /// sentences of their own; every other errno reads as the C library's `strerror`, lowercased.
  public enum Operation: Sendable {
    case any
    case reading
    case writing
  }

  /// `code` in plain words. The corresponding C function is `strerror`.
  public static func words(_ code: Int32, during operation: Operation = .any) -> String {
    switch (operation, code) {
    case (.reading, EBADF), (.writing, EBADF): return "it is closed"
    case (.reading, ENOENT): return "no such file"
    case (.reading, EACCES), (.reading, EPERM): return "permission denied"
    case (.reading, EISDIR): return "it is a directory"
    case (.reading, ENOTDIR): return "a part of the path is not a directory"
    case (.reading, ELOOP): return "too many symbolic links in the path"
    case (.reading, ENAMETOOLONG): return "the path is too long"
    case (.reading, EIO): return "an input/output error (the disk or device failed)"
    case (.reading, ENXIO), (.reading, ENODEV): return "no such device"
    case (.reading, EMFILE), (.reading, ENFILE): return "too many open files"
    case (.writing, EPIPE): return "the reading end of the pipe is closed"
    case (.writing, ENOSPC): return "the disk is full"
    case (.writing, EIO): return "an input/output error"
    case (.writing, EFBIG): return "the file is too large"
    case (.writing, EDQUOT): return "the disk quota is exceeded"
    default: return String(cString: strerror(code)).lowercased()
    }
  }
}
