import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

@testable import BeaconBridgeCLI

#if canImport(Glibc)
  import Glibc
#endif

/// The real binary at the boundaries that are files and secrets: `doctor` and
/// `diagnose` keep secrets out, the token-file rule, `diagnose --export` writes all or nothing
/// and never through a link, and state-directory errors name their cause.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct FileBoundaryTests {
  static var binary: String {
    var root = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { root.deleteLastPathComponent() }
    return root.appendingPathComponent(".build/debug/beaconbridge").path
  }

  /// Runs the binary with no system bus (nothing of the host's BlueZ or daemon is reached).
  /// `user` runs it as another user through setpriv(1).
  func run(_ arguments: [String], user: String? = nil) async throws -> ProcessRun {
    try #require(FileManager.default.isExecutableFile(atPath: Self.binary), "build the binary first")
    let environment = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/bb-no-bus"]
    guard let user else {
      return try await runProcess(
        Self.binary, arguments, environment: environment, removing: ["BEACONBRIDGE_STATE_DIR"])
    }
    return try await runProcess(
      "/usr/bin/setpriv", ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", Self.binary] + arguments,
      environment: environment, removing: ["BEACONBRIDGE_STATE_DIR"])
  }

  static let secrets = ["pa55word-x", "q-secret-1", "s1g-secret", "t0k-9f8e7d6c5b"]

  /// A configuration with URL credentials, secret parameters and a private token file.
  func secretConfiguration(in dir: String, tokenMode: mode_t = 0o600) throws -> String {
    try writeTokenFile("t0k-9f8e7d6c5b\n", to: dir + "/token")
    #expect(chmod(dir + "/token", tokenMode) == 0)
    let config = dir + "/beaconbridge.conf"
    try """
    [Upload]
    URL = https://fleet:pa55word-x@127.0.0.1:9/trips?token=q-secret-1&sig=s1g-secret&page=1
    TokenFile = \(dir)/token
    """.write(toFile: config, atomically: true, encoding: .utf8)
    return config
  }

  // MARK: secrets

  @Test func doctorTextJSONAndTheBundleHoldNoSecret() async throws {
    let dir = try scratchDirectory("secrets")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = try secretConfiguration(in: dir)
    let state = dir + "/state"
    try await makeStore(state)
    let text = try await run(["doctor", "--config", config, "--state-dir", state])
    let json = try await run(["doctor", "--json", "--config", config, "--state-dir", state])
    let parsed = try JSONValue.parse(Data(json.stdout.utf8))
    let url = parsed["checks"]?.arrayValue?.first { $0["name"]?.stringValue == "backend URL" }
    #expect(
      url?["detail"]?.stringValue
        == "https://<redacted>@127.0.0.1:9/trips?token=<redacted>&sig=<redacted>&page=1")
    #expect(
      text.stdout.contains("https://<redacted>@127.0.0.1:9/trips?token=<redacted>&sig=<redacted>&page=1"))

    let bundle = dir + "/bundle.tar.gz"
    let diagnose = try await run(["diagnose", "--export", bundle, "--config", config, "--state-dir", state])
    #expect(diagnose.status == 0, "\(diagnose.stderr)")
    let unpacked = dir + "/unpacked"
    try FileManager.default.createDirectory(atPath: unpacked, withIntermediateDirectories: true)
    let tar = try await runProcess("/bin/tar", ["-xzf", bundle, "-C", unpacked])
    #expect(tar.status == 0, "\(tar.stderr)")
    var files: [String: String] = [:]
    let enumerator = FileManager.default.enumerator(atPath: unpacked)
    while let name = enumerator?.nextObject() as? String {
      if let content = try? String(contentsOfFile: unpacked + "/" + name, encoding: .utf8) {
        files[name] = content
      }
    }
    #expect(
      files.keys.contains { $0.hasSuffix("doctor.json") }
        && files.keys.contains { $0.hasSuffix("beaconbridge.conf") })
    let outputs = ["doctor": text.stdout + text.stderr, "doctor --json": json.stdout + json.stderr]
      .merging(files) { a, _ in a }
    for (name, output) in outputs {
      for secret in Self.secrets { #expect(!output.contains(secret), "\(name) leaks \(secret)") }
    }
  }

  // MARK: the token-file rule, as doctor reports it

  @Test(arguments: [
    (0o600 as mode_t, "ok", "is a private, non-empty regular file"),
    (0o640 as mode_t, "ok", "is a private, non-empty regular file"),
    (0o644 as mode_t, "critical", "can be read by every user (mode 0644)"),
    (0o666 as mode_t, "critical", "can be written by every user (mode 0666)"),
  ])
  func doctorJudgesTheTokenFile(mode: mode_t, status: String, phrase: String) async throws {
    let dir = try scratchDirectory("token")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let config = try secretConfiguration(in: dir, tokenMode: mode)
    let result = try await run(["doctor", "--json", "--config", config, "--state-dir", dir + "/state"])
    let check = try JSONValue.parse(Data(result.stdout.utf8))["checks"]?.arrayValue?.first {
      $0["name"]?.stringValue == "token file"
    }
    #expect(check?["status"]?.stringValue == status, "\(result.stdout)")
    #expect(check?["detail"]?.stringValue?.contains(phrase) == true)
    if status == "critical" {
      #expect(result.status == 1)
      #expect(
        check?["recommendation"]?.stringValue
          == "chmod 0640 \(dir)/token && chown root:beaconbridge \(dir)/token")
    }
  }

  // MARK: diagnose --export

  func export(_ path: String, in dir: String) async throws -> ProcessRun {
    try await makeStore(dir + "/state")
    return try await run([
      "diagnose", "--export", path, "--config", dir + "/none.conf", "--state-dir", dir + "/state",
    ])
  }

  /// A store with one pairing, as `pair` writes it without a daemon: `diagnose` and `doctor`
  /// only read, and find "not found" where there is none.
  func makeStore(_ state: String) async throws {
    let pair = try await run([
      "pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--device-id", "U1", "--state-dir", state,
    ])
    try #require(pair.status == 0, "\(pair.stderr)")
  }

  func expectPlainWords(_ run: ProcessRun) {
    for raw in ["NSCocoaErrorDomain", "Error Domain", "NSPOSIXErrorDomain", "Code="] {
      #expect(!run.stderr.contains(raw), "raw Foundation error: \(run.stderr)")
    }
  }

  @Test func exportRefusesASymlinkAndLeavesItsTarget() async throws {
    let dir = try scratchDirectory("export")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let victim = dir + "/victim.txt"
    try "keep me\n".write(toFile: victim, atomically: true, encoding: .utf8)
    try FileManager.default.createSymbolicLink(atPath: dir + "/b.tar.gz", withDestinationPath: victim)
    let result = try await export(dir + "/b.tar.gz", in: dir)
    #expect(result.status == 1)
    #expect(
      result.stderr.contains("\(dir)/b.tar.gz") && result.stderr.contains("symbolic link"), "\(result.stderr)"
    )
    expectPlainWords(result)
    #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep me\n")
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: dir + "/b.tar.gz") == victim)
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".tmp") }.isEmpty)
  }

  @Test func exportReplacesAnOldBundleWhole() async throws {
    let dir = try scratchDirectory("export")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try "old".write(toFile: dir + "/b.tar.gz", atomically: true, encoding: .utf8)
    let result = try await export(dir + "/b.tar.gz", in: dir)
    #expect(result.status == 0, "\(result.stderr)")
    let bytes = try Data(contentsOf: URL(fileURLWithPath: dir + "/b.tar.gz"))
    #expect(bytes.prefix(2) == Data([0x1F, 0x8B]), "not a gzip file")
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["b.tar.gz", "state"])
  }

  @Test func exportIntoAMissingDirectoryIsASentence() async throws {
    let dir = try scratchDirectory("export")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let result = try await export(dir + "/nope/b.tar.gz", in: dir)
    #expect(result.status == 1)
    #expect(result.stderr.contains("the directory \(dir)/nope does not exist"), "\(result.stderr)")
    expectPlainWords(result)
  }

  /// A full disk (a 64 KiB tmpfs, filled): no file, no temporary file, a sentence.
  @Test func exportOnAFullDiskLeavesNothing() async throws {
    try #require(geteuid() == 0, "mounting a tmpfs needs root")
    let dir = try scratchDirectory("full")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let mountPoint = dir + "/small"
    try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
    let mount = try await runProcess("/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", mountPoint])
    try #require(mount.status == 0, "mount -t tmpfs failed: \(mount.stderr)")
    defer { _ = try? runProcessBlocking("/bin/umount", [mountPoint]) }
    // Fill it: the filler's write stops at ENOSPC.
    let filler = open(mountPoint + "/filler", O_WRONLY | O_CREAT, 0o600)
    let block = [UInt8](repeating: 0, count: 4096)
    while block.withUnsafeBytes({ write(filler, $0.baseAddress, $0.count) }) > 0 {}
    close(filler)
    let result = try await export(mountPoint + "/b.tar.gz", in: dir)
    #expect(result.status == 1)
    #expect(result.stderr.contains("the disk holding \(mountPoint) is full"), "\(result.stderr)")
    expectPlainWords(result)
    #expect(try FileManager.default.contentsOfDirectory(atPath: mountPoint) == ["filler"])
  }

  /// A write that fails midway (EIO, injected): the temporary file goes, the old file stays.
  @Test func aFailedWriteKeepsTheOldFile() throws {
    let dir = try scratchDirectory("export")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/b.tar.gz"
    try "old".write(toFile: path, atomically: true, encoding: .utf8)
    var calls = 0
    #expect {
      try ExportFile.write(Data(count: 100_000), to: path) { fd, buffer in
        calls += 1
        if calls == 1 { return write(fd, buffer.baseAddress, min(buffer.count, 1000)) }
        errno = EIO
        return -1
      }
    } throws: { error in
      (error as? ExportError)?.description.contains("input/output error") == true
    }
    #expect(try String(contentsOfFile: path, encoding: .utf8) == "old")
    #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["b.tar.gz"])
  }

  // MARK: the state directory

  @Test func stateDirectoryErrorsNameTheirCause() async throws {
    let dir = try scratchDirectory("state")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try "x".write(toFile: dir + "/file", atomically: true, encoding: .utf8)
    let cases: [(String, String)] = [
      (dir + "/file", "the state directory \(dir)/file is a file, not a directory"),
      (dir + "/file/sub", "its parent \(dir)/file is a file, not a directory"),
    ]
    for (path, phrase) in cases {
      let result = try await run(["pairs", "--state-dir", path])
      #expect(result.status == 1)
      #expect(result.stderr.contains(phrase), "\(result.stderr)")
      #expect(!result.stderr.contains("Run as root"), "\(result.stderr)")
      let doctor = try await run(["doctor", "--json", "--config", dir + "/none.conf", "--state-dir", path])
      let check = try JSONValue.parse(Data(doctor.stdout.utf8))["checks"]?.arrayValue?.first {
        $0["name"]?.stringValue == "state directory"
      }
      #expect(check?["status"]?.stringValue == "critical")
      #expect(check?["recommendation"]?.stringValue?.contains("--state-dir") == true)
    }
  }

  @Test(arguments: [
    ["pairs", "--state-dir", ""], ["doctor", "--state-dir", ""], ["pair", "--state-dir", ""],
  ])
  func anEmptyStateDirectoryIsAUsageError(_ argv: [String]) async throws {
    let result = try await run(argv)
    #expect(result.status == 64)
    #expect(result.stderr.contains("--state-dir needs a value, not an empty string"), "\(result.stderr)")
  }

  @Test func readOnlyAndPermissionDeniedStateDirectories() async throws {
    try #require(geteuid() == 0, "mounting and switching users need root")
    let dir = try scratchDirectory("state")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    #expect(chmod(dir, 0o755) == 0)
    let readOnly = dir + "/ro"
    try FileManager.default.createDirectory(atPath: readOnly, withIntermediateDirectories: true)
    let mount = try await runProcess("/bin/mount", ["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", readOnly])
    try #require(mount.status == 0, "mount -t tmpfs -o ro failed: \(mount.stderr)")
    defer { _ = try? runProcessBlocking("/bin/umount", [readOnly]) }
    // `pair` writes the store: the directory must be writable. (`pairs` only reads: it says the
    // store is not found.)
    let pair = ["pair", "--uuid", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", "--device-id", "U1", "--state-dir"]
    let ro = try await run(pair + [readOnly])
    #expect(ro.status == 1)
    #expect(ro.stderr.contains("is on a read-only file system"), "\(ro.stderr)")
    let roSub = try await run(pair + [readOnly + "/sub"])
    #expect(roSub.stderr.contains("is on a read-only file system"), "\(roSub.stderr)")
    let reading = try await run(["pairs", "--state-dir", readOnly])
    #expect(reading.status == 1)
    #expect(reading.stderr.contains("\(readOnly)/beaconbridge.sqlite was not found"), "\(reading.stderr)")
    // Root's 0755 directory, for nobody (uid 65534): permission denied, with the fix.
    let denied = try await run(pair + [dir], user: "65534")
    #expect(denied.status == 1)
    #expect(
      denied.stderr.contains("is not writable by nobody")
        && denied.stderr.contains("owned by root:root with mode 0755")
        && denied.stderr.contains("permission denied")
        && denied.stderr.contains("run as root or as a member of the beaconbridge group"), "\(denied.stderr)")
  }
}
