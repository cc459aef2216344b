import BeaconCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The daemon's log: stderr, with journald's `<N>` priority prefixes when stderr is the journal
/// (`$JOURNAL_STREAM` names stderr's device and inode, systemd.exec(5)), plain `level: text`
/// otherwise. It also keeps the last lines in memory for `status` and support bundles. Every line
/// goes through the `Redactor` first: URLs lose credentials and secret parameters, and the
/// configuration's secrets (`learnSecrets(of:)`) are scrubbed.
public final class DaemonLogger: Sendable {
  public let toJournal: Bool
  public let minimum: LogRecord.Level
  private let ring = Mutex<[String]>([])
  private let redactor = Mutex(Redactor())
  static let ringSize = 500

  public init(environment: [String: String], minimum: LogRecord.Level = .info) {
    toJournal = Self.stderrIsJournal(environment["JOURNAL_STREAM"])
    self.minimum = minimum
  }

  static func stderrIsJournal(_ value: String?) -> Bool {
    guard let value else { return false }
    let parts = value.split(separator: ":")
    guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
    var info = stat()
    guard fstat(STDERR_FILENO, &info) == 0 else { return false }
    return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
  }

  /// The line as written.
  public func format(_ level: LogRecord.Level, _ message: String) -> String {
    toJournal ? "<\(level.rawValue)>\(message)" : "\(level.name): \(message)"
  }

  /// Learns the secrets of the configuration in use (at start and on every reload).
  public func learnSecrets(of configuration: DaemonConfiguration) {
    let learned = Redactor(configuration: configuration)
    redactor.withLock { $0 = learned }
  }

  public func log(_ level: LogRecord.Level, _ text: String) {
    guard level.rawValue <= minimum.rawValue else { return }
    // Secrets redacted, and one record one line: a value with a CR, LF or escape cannot forge a
    // journal line.
    let message = redactor.withLock { $0 }.redact(text).escapingControlCharacters
    var line = format(level, message) + "\n"
    ring.withLock {
      $0.append("\(level.name): \(message)")
      if $0.count > Self.ringSize { $0.removeFirst($0.count - Self.ringSize) }
    }
    line.withUTF8 { buffer in _ = write(STDERR_FILENO, buffer.baseAddress, buffer.count) }
  }

  public var recent: [String] { ring.withLock { $0 } }
}
