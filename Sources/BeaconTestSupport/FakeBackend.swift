import BeaconCore
import Foundation

/// Runs Tests/Support/fake_backend.py: a real HTTP server on loopback that records every request
/// and injects failures. Stops when released.
public final class FakeBackend: @unchecked Sendable {
  public let port: Int
  public let logPath: String
  private let process: Process
  /// `https` when started with `--tls-cert`.
  public let scheme: String

  public struct Received: Sendable {
    public var status: String
    public var key: String?
    public var auth: String?
    public var body: JSONValue
    /// The request's `Content-Digest`, as sent.
    public var digest: String?
  }

  /// - Parameter arguments: extra flags (`--script`, `--fail-rate`, `--drop-rate`, `--delay`, `--token`,
  ///   `--hang`, `--tls-cert`, `--tls-key`, `--tls-client-ca`).
  ///
  /// Waits for the server's port on a thread of its own (`onOwnThread`), not on the caller's.
  public init(_ arguments: [String] = [], file: String = #filePath) async throws {
    var root = URL(fileURLWithPath: file)
    while !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
      root.deleteLastPathComponent()
      if root.path == "/" { throw CocoaError(.fileNoSuchFile) }
    }
    let script = root.appendingPathComponent("Tests/Support/fake_backend.py").path
    logPath =
      FileManager.default.temporaryDirectory.appendingPathComponent("backend-\(UUID().uuidString).jsonl").path
    _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
    process.arguments = [script, "--log", logPath] + arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    self.process = process
    // The first line is "PORT n".
    let reading = output.fileHandleForReading
    let text = try await onOwnThread {
      var line = Data()
      while true {
        let byte = reading.readData(ofLength: 1)
        if byte.isEmpty || byte == Data("\n".utf8) { break }
        line.append(byte)
      }
      return String(decoding: line, as: UTF8.self)
    }
    guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5)) else {
      process.terminate()
      throw CocoaError(
        .fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "fake backend said \(text)"])
    }
    self.port = port
    scheme = arguments.contains("--tls-cert") ? "https" : "http"
  }

  deinit {
    // SIGKILL, not terminate(): a child started from the test runner inherits a signal mask in
    // which SIGTERM is blocked, so it would never exit.
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    try? FileManager.default.removeItem(atPath: logPath)
  }

  public var url: URL { URL(string: "\(scheme)://127.0.0.1:\(port)/trips")! }

  /// The base for GET requests (`--serve-dir`): `http://127.0.0.1:PORT`.
  public var base: String { "\(scheme)://127.0.0.1:\(port)" }

  /// Every request so far, in arrival order.
  public func received() -> [Received] {
    let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { line in
      guard let json = try? JSONValue.parse(Data(line.utf8)) else { return nil }
      let status: String
      switch json["status"] {
      case .int(let n)?: status = String(n)
      case .string(let s)?: status = s
      default: status = "?"
      }
      return Received(
        status: status, key: json["key"]?.stringValue, auth: json["auth"]?.stringValue,
        body: json["body"] ?? .null, digest: json["digest"]?.stringValue)
    }
  }
}
