import Foundation

/// A test CA, a server certificate for 127.0.0.1 and a client certificate, made by `openssl`.
public struct TestPKI: Sendable {
  public let dir: String
  public var ca: String { dir + "/ca.pem" }
  public var serverCert: String { dir + "/server.pem" }
  public var serverKey: String { dir + "/server.key" }
  public var clientCert: String { dir + "/client.pem" }
  public var clientKey: String { dir + "/client.key" }

  public init() throws {
    dir = try scratchDirectory("pki")
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    try Self.openssl(
      ["req", "-x509"] + ec + [
        "-keyout", dir + "/ca.key", "-out", dir + "/ca.pem", "-days", "2", "-subj",
        "/CN=beaconbridge test CA",
      ])
    for (name, extra) in [
      ("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth"),
      ("client", "extendedKeyUsage=clientAuth"),
    ] {
      try Self.openssl(
        ["req"] + ec + [
          "-keyout", "\(dir)/\(name).key", "-out", "\(dir)/\(name).csr", "-subj", "/CN=\(name)",
        ])
      try extra.write(toFile: "\(dir)/\(name).ext", atomically: true, encoding: .utf8)
      try Self.openssl([
        "x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", dir + "/ca.pem", "-CAkey", dir + "/ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", "\(dir)/\(name).ext", "-out", "\(dir)/\(name).pem",
      ])
    }
  }

  static func openssl(_ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = arguments
    process.standardError = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
      throw CocoaError(
        .fileWriteUnknown,
        userInfo: [NSLocalizedDescriptionKey: "openssl \(arguments.joined(separator: " ")) failed"])
    }
  }
}

extension MosquittoBroker {
  /// A broker with a TLS listener too, on a port of its own, that shows `pki`'s server
  /// certificate; `extra` adds settings to that listener (`require_certificate true`).
  public static func withTLS(_ pki: TestPKI, extra: String = "") throws -> (
    broker: MosquittoBroker, tlsPort: Int
  ) {
    let tlsPort = freePort()
    let broker = try MosquittoBroker(
      extra: """
        listener \(tlsPort) 127.0.0.1
        cafile \(pki.ca)
        certfile \(pki.serverCert)
        keyfile \(pki.serverKey)
        \(extra)
        """)
    return (broker, tlsPort)
  }
}
