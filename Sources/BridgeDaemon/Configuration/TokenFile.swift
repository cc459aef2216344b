import BeaconCore
import BeaconCrypto

#if canImport(Glibc)
  import Glibc
#endif

/// Why a token file is refused: the file, what is wrong, and what fixes it.
public struct TokenFileError: Error, Hashable, Sendable, CustomStringConvertible {
  public var path: String
  /// What is wrong, as the end of a sentence that starts with the path.
  public var problem: String
  public var fix: String
  /// What the file is to its user: a token file, or a key file (`withKeyFile`).
  public var noun = "token file"

  public var description: String { "the \(noun) \(path) \(problem); to fix: \(fix)" }
}

/// The bearer token in `[Upload] TokenFile` (and `[GZone] TokenFile`): one reader for the
/// uploader, the G-Zone poller, `doctor` and `diagnose`, with ssh's rule for key files.
///
/// The file is refused, and nothing is sent, when it is
/// - not a regular file: a directory, a fifo, a device, a socket, or a symbolic link (it is
///   opened by `RegularFile.open` without following links, so a link cannot be swapped in
///   between the check and the read);
/// - readable or writable by others (`mode & 0o007`);
/// - readable or writable by its group, unless that group is the service's group
///   (`beaconbridge`) or the owner's primary group (a group the owner chose);
/// - empty (after trimming), larger than `maximumSize`, not UTF-8, or more than one line (a
///   control character inside a token would forge an HTTP header).
///
/// The checks are made on the open descriptor (`fstat`), and the token is read from that same
/// descriptor: there is no window between the check and the read. Leading and trailing
/// whitespace and newlines are trimmed; that is the only trimming.
public enum TokenFile {
  /// The service's group (packaging/: the unit's `Group=`).
  public static let serviceGroup = "beaconbridge"
  /// A bearer token is one line; anything larger is not a token file.
  public static let maximumSize = 64 * 1024

  /// Reads the token, or says why the file is refused.
  public static func read(_ path: String) throws(TokenFileError) -> String {
    try read(path, enforcingMode: true)
  }

  /// Reads the token whatever the file's mode: only for teaching the redactor a secret that
  /// must not leave in a support bundle, never for sending it.
  public static func readForRedaction(_ path: String) -> String? {
    try? read(path, enforcingMode: false)
  }

  /// Checks the file without keeping the token (`doctor`).
  public static func check(_ path: String) -> TokenFileError? {
    do {
      _ = try read(path)
      return nil
    } catch { return error }
  }

  /// A key file (`pair --eid-key-file`, `--irk-file`) by the same rule: a regular file, opened
  /// without following a link and without blocking, that others cannot read, not empty, at most
  /// `maximumKeyFileSize` bytes. Its bytes go to `body` in a buffer wiped afterwards, so the key
  /// is never left in a Swift string; `body`'s error names the file, never its text.
  public static func withKeyFile<T>(
    _ path: String, _ body: (UnsafeRawBufferPointer) throws(TokenFileError) -> T
  ) throws(TokenFileError) -> T {
    do throws(TokenFileError) {
      return try readKeyFile(path, body)
    } catch {
      var named = error
      named.noun = "key file"
      throw named
    }
  }

  private static func readKeyFile<T>(
    _ path: String, _ body: (UnsafeRawBufferPointer) throws(TokenFileError) -> T
  ) throws(TokenFileError) -> T {
    let (fd, _) = try open(path, holding: "the key (32 hex digits), with mode 0600", setting: .keyFile)
    defer { close(fd) }
    return try SecretBytes.withScratch(count: maximumKeyFileSize + 1) {
      (buffer) throws(TokenFileError) -> T in
      var count = 0
      while count < buffer.count {
        let n = try readSome(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[count...]), path)
        if n == 0 { break }
        count += n
      }
      guard count <= maximumKeyFileSize else {
        throw TokenFileError(
          path: path, problem: "is larger than a key file (\(maximumKeyFileSize) bytes at most)",
          fix: "put only the key in it: 32 hex digits")
      }
      guard buffer[0..<count].contains(where: { !($0 == 0x20 || (0x09...0x0D).contains($0)) }) else {
        throw TokenFileError(path: path, problem: "is empty", fix: "write the key into it: 32 hex digits")
      }
      return try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }
  }

  /// A key file holds 32 hex digits and perhaps a newline; anything much larger is not one.
  public static let maximumKeyFileSize = 256

  static func read(_ path: String, enforcingMode: Bool) throws(TokenFileError) -> String {
    let (fd, info) = try open(
      path, holding: "the token, with mode 0640, owned by root:\(serviceGroup)", enforcingMode: enforcingMode)
    defer { close(fd) }
    guard Int(info.st_size) <= maximumSize else {
      throw TokenFileError(
        path: path,
        problem: "is \(info.st_size) bytes, larger than a token (\(maximumSize / 1024) KiB at most)",
        fix: "put only the token in it")
    }
    var bytes: [UInt8] = []
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
    defer { chunk.deallocate() }
    while bytes.count <= maximumSize {
      let n = try readSome(fd, into: chunk, path)
      if n == 0 { break }
      bytes.append(contentsOf: chunk[0..<n])
    }
    guard bytes.count <= maximumSize else {
      throw TokenFileError(
        path: path, problem: "is larger than a token (\(maximumSize / 1024) KiB at most)",
        fix: "put only the token in it")
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      throw TokenFileError(path: path, problem: "is not UTF-8 text", fix: "put only the token in it, as text")
    }
    let token = trimmed(text)
    guard !token.isEmpty else {
      throw TokenFileError(path: path, problem: "is empty", fix: "write the backend's token into it")
    }
    guard !token.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
      throw TokenFileError(
        path: path, problem: "holds more than one line or a control character",
        fix: "put only the token in it, on one line")
    }
    return token
  }

  /// Opens `path` without following a link or blocking, refusing what is not a regular file and,
  /// when `enforcingMode`, a mode others can use. `what` is what the file should hold, for the
  /// fix. The caller closes the descriptor.
  private static func open(
    _ path: String, holding what: String, setting: Setting = .tokenFile, enforcingMode: Bool = true
  ) throws(TokenFileError) -> (fd: Int32, info: stat) {
    let fd: Int32
    let info: stat
    do throws(InputError) { (fd, info) = try RegularFile.open(path, followLinks: false) } catch {
      if let kind = error.kind {
        throw TokenFileError(
          path: path, problem: "is \(kind), not a regular file", fix: "make it a regular file holding \(what)"
        )
      }
      throw openError(path, errno: error.code ?? EINVAL, setting: setting)
    }
    if enforcingMode,
      let problem = modeProblem(
        mode: info.st_mode, uid: info.st_uid, gid: info.st_gid, serviceGroupTrusted: setting == .tokenFile)
    {
      close(fd)
      throw TokenFileError(
        path: path, problem: problem, fix: setting == .keyFile ? keyFix(path) : Self.fix(path))
    }
    return (fd, info)
  }

  /// One read(2) into `buffer`, retried on EINTR: the bytes read, 0 at the end of the file.
  private static func readSome(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, _ path: String)
    throws(TokenFileError) -> Int
  {
    while true {
      let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
      if n >= 0 { return n }
      guard errno == EINTR else {
        throw TokenFileError(
          path: path, problem: "cannot be read (\(SystemError.words(errno)))", fix: Self.fix(path))
      }
    }
  }

  /// The one trimming rule: whitespace and newlines at both ends.
  static func trimmed(_ text: String) -> String {
    let isSpace: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
    let scalars = text.unicodeScalars
    guard let first = scalars.firstIndex(where: { !isSpace($0) }),
      let last = scalars.lastIndex(where: { !isSpace($0) })
    else { return "" }
    return String(scalars[first...last])
  }

  /// The permission rule on its own, so that it is tested as a table. `serviceGroupTrusted`:
  /// whether group `beaconbridge` may read the file (a token the daemon sends); a key file's
  /// key goes to the daemon over D-Bus, never by the file, and that group is the trip
  /// recorder's, so it is not trusted with a key.
  static func modeProblem(mode: mode_t, uid: uid_t, gid: gid_t, serviceGroupTrusted: Bool = true) -> String? {
    let octal = "mode " + String(mode & 0o7777, radix: 8).leftPadded(to: 4)
    if mode & 0o007 != 0 {
      return "can be \(mode & 0o002 != 0 ? "written" : "read") by every user (\(octal))"
    }
    if mode & 0o070 != 0, !groupIsTrusted(gid, owner: uid, serviceGroup: serviceGroupTrusted) {
      return serviceGroupTrusted
        ? "can be \(mode & 0o020 != 0 ? "written" : "read") by group \(groupName(gid)), which is neither \(serviceGroup) nor the owner's group (\(octal))"
        : "can be \(mode & 0o020 != 0 ? "written" : "read") by group \(groupName(gid)), which is not the owner's group (\(octal))"
    }
    return nil
  }

  static func groupIsTrusted(_ gid: gid_t, owner: uid_t, serviceGroup trusted: Bool = true) -> Bool {
    if trusted, let service = getgrnam(serviceGroup), service.pointee.gr_gid == gid { return true }
    if let user = getpwuid(owner), user.pointee.pw_gid == gid { return true }
    return false
  }

  static func groupName(_ gid: gid_t) -> String {
    if let group = getgrgid(gid), let name = group.pointee.gr_name { return String(cString: name) }
    return "\(gid)"
  }

  static func fix(_ path: String) -> String {
    "chmod 0640 \(path) && chown root:\(serviceGroup) \(path)"
  }

  /// A key file is for its owner only: group beaconbridge is the trip recorder's.
  static func keyFix(_ path: String) -> String { "chmod 0600 \(path) (the owner only)" }

  /// Where the path came from, for a fix that names it.
  enum Setting {
    /// `TokenFile` in `[Upload]` or `[GZone]`.
    case tokenFile
    /// `pair --eid-key-file` or `--irk-file`.
    case keyFile

    var name: String {
      switch self {
      case .tokenFile: "TokenFile"
      case .keyFile: "--eid-key-file or --irk-file"
      }
    }
  }

  static func openError(_ path: String, errno code: Int32, setting: Setting = .tokenFile) -> TokenFileError {
    switch code {
    case ENOENT:
      TokenFileError(
        path: path, problem: "does not exist",
        fix: setting == .keyFile
          ? "write the key into it (32 hex digits), then chmod 0600 \(path)"
          : "create it with the backend's token, then chmod 0640 \(path) && chown root:\(serviceGroup) \(path)"
      )
    case ELOOP:
      TokenFileError(
        path: path, problem: "is a symbolic link, which is not followed",
        fix: "point \(setting.name) at the file itself")
    case EACCES:
      TokenFileError(
        path: path, problem: "cannot be read by this user (permission denied)",
        fix: setting == .keyFile
          ? "run pair as the file's owner or as root"
          : "run as root or as a member of \(serviceGroup); \(fix(path))")
    case ENOTDIR:
      TokenFileError(
        path: path, problem: "is not reachable: a part of its path is not a directory",
        fix: "correct \(setting.name)")
    default:
      TokenFileError(
        path: path, problem: "cannot be opened (\(SystemError.words(code)))",
        fix: setting == .keyFile ? keyFix(path) : fix(path))
    }
  }
}

extension String {
  func leftPadded(to width: Int) -> String {
    count >= width ? self : String(repeating: "0", count: width - count) + self
  }
}
