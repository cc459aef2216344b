import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Runs Tests/Support/mqtt_proxy.py in front of a real broker: every packet passes both ways but
/// the broker's PUBACKs, which are dropped (a broker that never acknowledges) or delayed (one slow
/// to). Killed when released.
public final class MQTTProxy: @unchecked Sendable {
  public enum PubackMode: Sendable {
    case pass
    case drop
    case delay(Double)

    var argument: String {
      switch self {
      case .pass: "pass"
      case .drop: "drop"
      case .delay(let seconds): "delay:\(seconds)"
      }
    }
  }

  public let port: Int
  public let logPath: String
  private let process: Process

  public init(broker: MosquittoBroker, pubacks: PubackMode, file: String = #filePath) throws {
    var root = URL(fileURLWithPath: file)
    while !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
      root.deleteLastPathComponent()
      if root.path == "/" { throw CocoaError(.fileNoSuchFile) }
    }
    let script = root.appendingPathComponent("Tests/Support/mqtt_proxy.py").path
    logPath = broker.dir + "/proxy-\(UUID().uuidString).log"
    _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = [
      script, "--broker", String(broker.port), "--puback", pubacks.argument, "--log", logPath,
    ]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    // The first line is the port it listens on.
    var line = Data()
    while true {
      let byte = output.fileHandleForReading.readData(ofLength: 1)
      if byte.isEmpty || byte == Data("\n".utf8) { break }
      line.append(byte)
    }
    guard let port = Int(String(decoding: line, as: UTF8.self)) else {
      kill(process.processIdentifier, SIGKILL)
      throw CocoaError(
        .fileReadCorruptFile,
        userInfo: [NSLocalizedDescriptionKey: "mqtt_proxy.py said \(String(decoding: line, as: UTF8.self))"])
    }
    self.port = port
  }

  deinit {
    // SIGKILL: a child of the test runner may have SIGTERM blocked.
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
  }

  /// The proxy's log lines so far ("publish TOPIC", "puback dropped", …).
  public var log: [String] {
    ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
  }

  /// How many PUBLISH packets the client sent on `topic`.
  public func published(_ topic: String) -> Int { log.filter { $0 == "publish \(topic)" }.count }
}
