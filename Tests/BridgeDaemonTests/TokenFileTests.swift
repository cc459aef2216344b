import BeaconCore
import BeaconTestSupport
import BridgeDaemon
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The token-file rule (ssh's, for key files) on real files: what is read, what is refused and
/// why, and what `doctor` says about each.
@Suite struct TokenFileTests {
  /// How a case's file is made.
  enum Shape: Sendable, CustomStringConvertible {
    /// A regular file with this content, mode and group (nil: the owner's primary group).
    case file(String, mode: mode_t, group: gid_t?)
    case directory, fifo, missing
    /// A symbolic link to a private regular file.
    case link

    var description: String {
      switch self {
      case .file(let text, let mode, let group):
        "file \(text.debugDescription) mode \(String(mode, radix: 8)) group \(group.map(String.init) ?? "owner's")"
      case .directory: "directory"
      case .fifo: "fifo"
      case .missing: "missing"
      case .link: "symlink"
      }
    }
  }

  /// A group that is neither the owner's (root's, when the tests run as root) nor beaconbridge.
  static let strangerGroup: gid_t = 54_321

  func make(_ shape: Shape, in dir: String) throws -> String {
    let path = dir + "/token"
    switch shape {
    case .file(let text, let mode, let group):
      try Data(text.utf8).write(to: URL(fileURLWithPath: path))
      #expect(chmod(path, mode) == 0)
      if let group { #expect(chown(path, geteuid(), group) == 0, "chown needs root") }
    case .directory:
      try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    case .fifo:
      #expect(mkfifo(path, 0o600) == 0)
    case .missing:
      break
    case .link:
      try writeTokenFile("t0k-linked\n", to: dir + "/real")
      try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: dir + "/real")
    }
    return path
  }

  /// (file, token read or nil when refused, a phrase the refusal contains).
  static let table: [(Shape, String?, String)] = [
    (.file("t0k-private\n", mode: 0o600, group: nil), "t0k-private", ""),
    (.file("  t0k-trimmed \r\n\n", mode: 0o400, group: nil), "t0k-trimmed", ""),
    (.file("t0k-group\n", mode: 0o640, group: nil), "t0k-group", ""),
    (.file("t0k-group-rw\n", mode: 0o660, group: nil), "t0k-group-rw", ""),
    (.file("t0k-world\n", mode: 0o644, group: nil), nil, "can be read by every user (mode 0644)"),
    (.file("t0k-world-w\n", mode: 0o602, group: nil), nil, "can be written by every user (mode 0602)"),
    (.file("t0k-world-x\n", mode: 0o601, group: nil), nil, "by every user (mode 0601)"),
    (
      .file("t0k-stranger\n", mode: 0o640, group: strangerGroup), nil,
      "neither beaconbridge nor the owner's group"
    ),
    (.file("t0k-stranger\n", mode: 0o600, group: strangerGroup), "t0k-stranger", ""),
    (.file("", mode: 0o600, group: nil), nil, "is empty"),
    (.file(" \n\t\n", mode: 0o600, group: nil), nil, "is empty"),
    (.file("line1\nline2\n", mode: 0o600, group: nil), nil, "more than one line"),
    (.directory, nil, "is a directory, not a regular file"),
    (.fifo, nil, "is a FIFO, not a regular file"),
    (.link, nil, "is a symbolic link"),
    (.missing, nil, "does not exist"),
  ]

  @Test(arguments: 0..<table.count)
  func rule(_ index: Int) throws {
    let (shape, expected, phrase) = Self.table[index]
    let dir = try scratchDirectory("token")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = try make(shape, in: dir)
    do {
      let token = try TokenFile.read(path)
      #expect(token == expected, "\(shape)")
      #expect(TokenFile.check(path) == nil)
    } catch {
      #expect(expected == nil, "\(shape) refused: \(error)")
      #expect(error.description.contains(phrase), "\(shape): \(error)")
      #expect(error.description.contains(path), "the error names the file: \(error)")
      #expect(TokenFile.check(path) == error)
      // The doctor's verdict for the same file.
      let report = Doctor.evaluate(
        DoctorTests().facts(tokenFiles: [.init(key: "[Upload] TokenFile", path: path, problem: error)]))
      let check = try #require(report.checks.first { $0.name == "token file" })
      #expect(check.status == .critical)
      #expect(check.detail.contains(phrase))
    }
  }

  @Test func modeProblemsNameTheFix() throws {
    let dir = try scratchDirectory("token")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = try make(.file("t0k\n", mode: 0o644, group: nil), in: dir)
    let error = try #require(TokenFile.check(path))
    #expect(error.fix == "chmod 0640 \(path) && chown root:beaconbridge \(path)")
    #expect(
      error.description
        == "the token file \(path) can be read by every user (mode 0644); to fix: \(error.fix)")
  }

  /// A key file's fix is the owner only (`chmod 0600`), never the token's group beaconbridge,
  /// which is the trip recorder's: a key is not the daemon's to read from a file.
  @Test(arguments: [(0o644, nil), (0o640, strangerGroup)] as [(mode_t, gid_t?)])
  func keyFileProblemsNameTheOwnerOnlyFix(mode: mode_t, group: gid_t?) throws {
    let dir = try scratchDirectory("keyfile")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = try make(.file("000102030405060708090a0b0c0d0e0f\n", mode: mode, group: group), in: dir)
    #expect {
      _ = try PairingKeyFile.digits(path)
    } throws: { error in
      let refusal = try #require(error as? TokenFileError)
      #expect(refusal.fix == "chmod 0600 \(path) (the owner only)")
      #expect(!refusal.description.contains("chown") && !refusal.description.contains("beaconbridge"))
      return refusal.description.hasPrefix("the key file \(path) can be read by")
    }
  }

  /// The fifo is refused without blocking (O_NONBLOCK): no writer ever opens it.
  @Test(.timeLimit(.minutes(1))) func fifoDoesNotBlock() throws {
    let dir = try scratchDirectory("token")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = try make(.fifo, in: dir)
    #expect(TokenFile.check(path) != nil)
  }
}
