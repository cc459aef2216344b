import BeaconCore
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A `mosquitto_sub` (MQTT 5, QoS 1, a clean session of its own) on one topic filter of a test
/// broker, writing every message it gets (retained ones included, flagged) to a file: what a
/// fleet backend sees.
public final class MQTTWatcher: @unchecked Sendable {
  public struct Message: Sendable {
    public var topic: String
    /// Delivered from the broker's retained store (at subscribe), not live.
    public var retained: Bool
    public var payload: JSONValue
  }

  private let process: Process
  private let file: String

  /// Starts the subscriber on `topic` and waits until the broker has its subscription.
  public init(_ broker: MosquittoBroker, topic: String) throws {
    let id = "bb-watch-\(UUID().uuidString.prefix(8))"
    file = broker.dir + "/\(id).txt"
    _ = FileManager.default.createFile(atPath: file, contents: nil)
    process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
    process.arguments = [
      "-h", "127.0.0.1", "-p", String(broker.port), "-V", "5", "-q", "1", "-i", id, "-t", topic, "-F",
      "%r\t%t\t%p",
    ]
    process.standardOutput = FileHandle(forWritingAtPath: file)!
    process.standardError = FileHandle.nullDevice
    try process.run()
    try waitUntilBlocking("the broker acknowledged the subscription of \(id)", poll: .milliseconds(20)) {
      broker.log.contains("Sending SUBACK to \(id)")
    }
  }

  deinit {
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
    }
  }

  /// Every message so far, in arrival order (a payload that is not JSON is left out).
  public var messages: [Message] {
    let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { line in
      let parts = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
      guard parts.count == 3, let payload = try? JSONValue.parse(Data(parts[2].utf8)) else { return nil }
      return Message(topic: String(parts[1]), retained: parts[0] == "1", payload: payload)
    }
  }
}

extension MosquittoBroker {
  /// Publishes `payload` with `mosquitto_pub` (MQTT 5, QoS 1), retained when asked, and returns
  /// once the broker acknowledged it.
  public func publish(_ topic: String, _ payload: String, retain: Bool = true) async throws {
    let run = try await runProcess(
      "/usr/bin/mosquitto_pub",
      ["-h", "127.0.0.1", "-p", String(port), "-V", "5", "-q", "1", "-t", topic, "-m", payload]
        + (retain ? ["-r"] : []))
    guard run.status == 0 else {
      throw CocoaError(
        .fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "mosquitto_pub failed: \(run.stderr)"])
    }
  }

  /// Publishes the file at `path` as one retained message (`mosquitto_pub -f`): for payloads
  /// beyond a command line's length.
  public func publish(_ topic: String, file path: String) async throws {
    let run = try await runProcess(
      "/usr/bin/mosquitto_pub",
      ["-h", "127.0.0.1", "-p", String(port), "-V", "5", "-q", "1", "-t", topic, "-f", path, "-r"])
    guard run.status == 0 else {
      throw CocoaError(
        .fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "mosquitto_pub failed: \(run.stderr)"])
    }
  }

  /// The message retained on `topic` now, read by a fresh subscriber; nil when none is.
  public func retained(_ topic: String) async throws -> JSONValue? {
    let run = try await runProcess(
      "/usr/bin/mosquitto_sub",
      [
        "-h", "127.0.0.1", "-p", String(port), "-V", "5", "-t", topic, "-C", "1", "-W", "3",
        "--retained-only",
      ])
    guard run.status == 0 else { return nil }
    return try? JSONValue.parse(Data(run.stdout.utf8))
  }
}
