import BeaconTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The commands that only read (`pairs`, `replay --state-dir`, `doctor`, `diagnose`) on a
/// healthy state directory mounted read-only (a real bind mount, remounted `ro`), through the
/// real binary; and `diagnose`, which writes its bundle whatever the state directory holds.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct ReadOnlyCommandsTests {
  let files = FileBoundaryTests()
  static let capture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("HCITests/Fixtures/vm-ibeacons.btsnoop").path

  @discardableResult
  func command(_ path: String, _ arguments: [String]) async throws -> Int32 {
    try await runProcess(path, arguments).status
  }

  /// A store with a pairing, bind-mounted read-only; `body` gets the mount point.
  func withReadOnlyState(_ body: (_ mounted: String, _ dir: String) async throws -> Void) async throws {
    try #require(geteuid() == 0, "a bind mount needs root")
    let dir = try scratchDirectory("ro-cmd")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try await files.makeStore(dir + "/state")
    let mounted = dir + "/mounted"
    try FileManager.default.createDirectory(atPath: mounted, withIntermediateDirectories: true)
    let bound = try await command("/bin/mount", ["--bind", dir + "/state", mounted])
    try #require(bound == 0, "mount --bind failed")
    defer { _ = try? runProcessBlocking("/bin/umount", [mounted]) }
    let remounted = try await command("/bin/mount", ["-o", "remount,bind,ro", mounted])
    try #require(remounted == 0, "remount ro failed")
    #expect(!FileManager.default.createFile(atPath: mounted + "/probe", contents: Data()), "not read-only")
    try await body(mounted, dir)
  }

  @Test func pairsReadsAReadOnlyStateDirectory() async throws {
    try await withReadOnlyState { mounted, _ in
      let listed = try await files.run(["pairs", "--json", "--state-dir", mounted])
      #expect(listed.status == 0, "\(listed.stderr)")
      #expect(listed.stdout.contains("\"deviceId\":\"U1\""), "\(listed.stdout)")
    }
  }

  @Test func replayReadsAReadOnlyStateDirectory() async throws {
    try await withReadOnlyState { mounted, _ in
      let replay = try await files.run(["replay", Self.capture, "--json", "--state-dir", mounted])
      #expect(replay.status == 0, "\(replay.stderr)")
    }
  }

  /// The store is healthy and read: a warning says the daemon could not write there, nothing is
  /// critical about the store.
  @Test func doctorReadsAReadOnlyStateDirectory() async throws {
    try await withReadOnlyState { mounted, dir in
      let doctor = try await files.run([
        "doctor", "--json", "--config", dir + "/none.conf", "--state-dir", mounted,
      ])
      let report = try JSONSerialization.jsonObject(with: Data(doctor.stdout.utf8)) as? [String: Any]
      let checks = report?["checks"] as? [[String: Any]] ?? []
      func check(_ name: String) -> [String: Any]? { checks.first { $0["name"] as? String == name } }
      #expect(check("store")?["status"] as? String == "ok", "\(doctor.stdout)")
      #expect(check("state directory")?["status"] as? String == "warning", "\(doctor.stdout)")
      #expect((check("state directory")?["detail"] as? String)?.contains("read-only file system") == true)
    }
  }

  @Test func diagnoseBundlesAReadOnlyStateDirectory() async throws {
    try await withReadOnlyState { mounted, dir in
      let bundle = dir + "/b.tar.gz"
      let result = try await files.run([
        "diagnose", "--lines", "1", "--export", bundle, "--config", dir + "/none.conf", "--state-dir",
        mounted,
      ])
      #expect(result.status == 0, "\(result.stderr)")
      let manifest = try await unpacked(bundle, in: dir)["MANIFEST.txt"] ?? ""
      #expect(manifest.contains("pairings.json") && manifest.contains("outbox.json"), "\(manifest)")
      let pairings = try await unpacked(bundle, in: dir)["pairings.json"]
      #expect(pairings?.contains("U1") == true)
    }
  }

  /// The bundle's files by name.
  func unpacked(_ bundle: String, in dir: String) async throws -> [String: String] {
    let out = dir + "/unpacked-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: out) }
    let tar = try await runProcess("/bin/tar", ["-xzf", bundle, "-C", out])
    #expect(tar.status == 0, "\(tar.stderr)")
    let folder = try #require(try FileManager.default.contentsOfDirectory(atPath: out).first)
    var texts: [String: String] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: out + "/" + folder) {
      texts[name] = try String(contentsOfFile: out + "/" + folder + "/" + name, encoding: .utf8)
    }
    return texts
  }

  /// A state directory or store that is not there is a finding in the bundle, never a reason to
  /// write none; and diagnose creates neither.
  @Test(arguments: ["missing-dir", "empty-dir"])
  func diagnoseWritesItsBundleWhenTheStateIsMissing(shape: String) async throws {
    let dir = try scratchDirectory("diag-missing")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let state = dir + "/state"
    if shape == "empty-dir" {
      try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
    }
    let bundle = dir + "/b.tar.gz"
    let result = try await files.run([
      "diagnose", "--lines", "1", "--export", bundle, "--config", dir + "/none.conf", "--state-dir", state,
    ])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("Wrote \(bundle)"))
    let texts = try await unpacked(bundle, in: dir)
    let manifest = texts["MANIFEST.txt"] ?? ""
    let finding =
      shape == "missing-dir" ? "\(state) was not found" : "\(state)/beaconbridge.sqlite was not found"
    let findings = manifest.components(separatedBy: "\nFILES\n").first ?? ""
    #expect(findings.contains("FINDINGS") && findings.contains(finding), "\(manifest)")
    #expect(result.stderr.contains(finding), "\(result.stderr)")
    #expect(texts["doctor.txt"]?.contains(finding) == true)
    // Read only: nothing made where the state was to be.
    #expect(FileManager.default.fileExists(atPath: state) == (shape == "empty-dir"))
    #expect(!FileManager.default.fileExists(atPath: state + "/beaconbridge.sqlite"))
  }

  /// A configuration that run and doctor refuse is not "defaults apply" in the bundle.
  @Test func diagnoseSaysARefusedConfigurationIsRefused() async throws {
    let dir = try scratchDirectory("diag-conf")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    try await files.makeStore(dir + "/state")
    let bad = dir + "/bad.conf"
    try "[Presence]\nexitTimeout = soon\n".write(toFile: bad, atomically: true, encoding: .utf8)
    let unreadable = dir + "/fifo.conf"
    #expect(mkfifo(unreadable, 0o600) == 0)
    for (config, phrase) in [
      (bad, "refused by run and doctor: \(bad):2: exitTimeout \"soon\" is not a plain decimal number"),
      (unreadable, "run and doctor refuse it: the daemon does not start"),
      (dir + "/absent.conf", "run and doctor refuse it"),
    ] {
      let bundle = dir + "/b.tar.gz"
      let result = try await files.run([
        "diagnose", "--lines", "1", "--export", bundle, "--config", config, "--state-dir", dir + "/state",
      ])
      #expect(result.status == 0, "\(result.stderr)")
      let manifest = try await unpacked(bundle, in: dir)["MANIFEST.txt"] ?? ""
      #expect(manifest.contains(phrase), "\(config): \(manifest)")
      #expect(!manifest.contains("defaults apply"), "\(manifest)")
    }
  }
}
