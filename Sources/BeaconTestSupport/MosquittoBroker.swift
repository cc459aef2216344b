import BeaconCore
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A real Mosquitto broker (Debian's `mosquitto`) on a loopback port, with a config and a
/// persistence directory of its own in a temp dir, and a persistent-session subscriber
/// (`mosquitto_sub`, MQTT 5, QoS 1) that writes every message it gets to a file. Killed (-9) when
/// released; `kill()` and `start()` restart it on the same port.
public final class MosquittoBroker: @unchecked Sendable {
  public let dir: String
  public let port: Int
  /// Extra lines for the listener (`password_file`, TLS files, …).
  private let extra: String
  private let anonymous: Bool
  private var broker: Process?
  private var subscriber: Process?
  private let received: String

  /// One message the subscriber got.
  public struct Message: Sendable {
    public var topic: String
    /// The MQTT 5 user properties, `key:value`.
    public var properties: String
    public var payload: JSONValue
  }

  /// - `user`: when set, only this user with its password gets in (a `mosquitto_passwd` file in
  ///   the broker's directory); anyone else is refused at CONNECT.
  public init(extra: String = "", anonymous: Bool = true, user: (name: String, password: String)? = nil)
    throws
  {
    dir = try scratchDirectory("mosquitto")
    port = Self.freePort()
    var extra = extra
    if let user {
      let passwd = dir + "/passwd"
      let tool = try runProcessBlocking(
        "/usr/bin/mosquitto_passwd", ["-b", "-c", passwd, user.name, user.password])
      guard tool.status == 0 else {
        throw CocoaError(
          .fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "mosquitto_passwd failed: \(tool.stderr)"])
      }
      extra += "\npassword_file \(passwd)"
    }
    self.extra = extra
    self.anonymous = anonymous && user == nil
    received = dir + "/received.txt"
    _ = FileManager.default.createFile(atPath: received, contents: nil)
    try start()
  }

  /// A free loopback port: bind 0, read it, close.
  public static func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
        _ = bind(fd, pointer, length)
        return getsockname(fd, pointer, &length)
      }
    }
    close(fd)
    return Int(UInt16(bigEndian: address.sin_port))
  }

  deinit {
    kill()
    if let subscriber, subscriber.isRunning {
      Glibc.kill(subscriber.processIdentifier, SIGKILL)
      subscriber.waitUntilExit()
    }
    try? FileManager.default.removeItem(atPath: dir)
  }

  /// Starts (or restarts) the broker and waits until it accepts connections.
  public func start() throws {
    let config = """
      per_listener_settings false
      \(geteuid() == 0 ? "user root" : "")
      allow_anonymous \(anonymous)
      persistence true
      persistence_location \(dir)/
      autosave_interval 1
      log_dest file \(dir)/broker.log
      log_type all
      listener \(port) 127.0.0.1
      \(extra)

      """
    try config.write(toFile: dir + "/mosquitto.conf", atomically: true, encoding: .utf8)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
    process.arguments = ["-c", dir + "/mosquitto.conf"]
    process.standardOutput = FileHandle.nullDevice
    // Before the log file opens, mosquitto reports config errors on stderr.
    _ = FileManager.default.createFile(atPath: dir + "/stderr.txt", contents: nil)
    process.standardError = FileHandle(forWritingAtPath: dir + "/stderr.txt")
    try process.run()
    broker = process
    // A broker that exits (a bad config) is reported with its log at once, not after the guard.
    try waitUntilBlocking("mosquitto accepting connections on port \(port)", poll: .milliseconds(20)) {
      accepts() || !process.isRunning
    }
    guard accepts() else {
      let log =
        ((try? String(contentsOfFile: dir + "/broker.log", encoding: .utf8)) ?? "")
        + ((try? String(contentsOfFile: dir + "/stderr.txt", encoding: .utf8)) ?? "")
      throw CocoaError(
        .fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "mosquitto did not start: \(log)"])
    }
  }

  /// kill -9: no clean shutdown, no last save.
  public func kill() {
    guard let broker, broker.isRunning else { return }
    Glibc.kill(broker.processIdentifier, SIGKILL)
    broker.waitUntilExit()
  }

  private func accepts() -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }

  /// Starts the subscriber on `topic` (a persistent session, QoS 1), with optional
  /// `mosquitto_sub` arguments (credentials, TLS), and waits until the broker has its
  /// subscription.
  public func subscribe(_ topic: String = "fleet/+/trips", arguments: [String] = []) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
    process.arguments =
      [
        "-h", "127.0.0.1", "-p", String(port), "-V", "5", "-q", "1", "-c", "-i", "bb-test-subscriber",
        "-x", "3600", "-t", topic, "-F", "%t\t%P\t%p",
      ] + arguments
    let output = FileHandle(forWritingAtPath: received)!
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    subscriber = process
    try waitUntilBlocking(
      "the broker acknowledged the subscription of bb-test-subscriber", poll: .milliseconds(20)
    ) {
      log.contains("Sending SUBACK to bb-test-subscriber")
    }
  }

  /// Every message the subscriber wrote, in arrival order.
  public func messages() -> [Message] {
    let text = (try? String(contentsOfFile: received, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { line in
      let parts = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
      guard parts.count == 3, let payload = try? JSONValue.parse(Data(parts[2].utf8)) else { return nil }
      return Message(topic: String(parts[0]), properties: String(parts[1]), payload: payload)
    }
  }

  /// The broker's log, for failure messages.
  public var log: String { (try? String(contentsOfFile: dir + "/broker.log", encoding: .utf8)) ?? "" }
}
