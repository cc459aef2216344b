import BeaconBridgeCLI
import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

/// `pair --eid-key-file` and `pair --irk-file` without a daemon, on a real store: the key file
/// rule, and the key in no output.
@Suite struct PairingByKeyTests {
  static let eidKey = "E2C56DB5DFFB48D2B060D0F5A71096E0"
  static let irk = "ec0234a357c8ad05341010a60a397d9b"

  func run(_ argv: [String]) async -> (status: Int32, out: String, err: String) {
    let console = CapturingConsole()
    let status = await CLI.main(argv, console: console)
    return (status, console.stdout, console.stderr)
  }

  func keyFile(_ dir: String, _ name: String, _ text: String, mode: mode_t = 0o600) throws -> String {
    let path = dir + "/" + name
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    #expect(chmod(path, mode) == 0)
    return path
  }

  /// No output may hold a key, in either case.
  func expectNoKey(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
    for key in [Self.eidKey, Self.irk] {
      #expect(!text.lowercased().contains(key.lowercased()), "\(text)", sourceLocation: sourceLocation)
    }
  }

  @Test func pairByKeyListsWithoutTheKeyAndStoresItForTheOwnerOnly() async throws {
    let dir = scratchPath("bykey")
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let state = dir + "/state"
    let eid = try keyFile(dir, "eid.key", Self.eidKey + "\n")
    let irk = try keyFile(dir, "irk.key", Self.irk, mode: 0o640)
    var outputs = ""
    let e = await run([
      "pair", "--eid-key-file", eid, "--rotation-exponent", "10", "--beacon-clock", "65280", "--device-id",
      "UNIT-E1", "--label", "driver tag", "--state-dir", state,
    ])
    #expect(e.status == 0, "\(e.err)")
    #expect(e.out.contains("Paired an Eddystone-EID key with UNIT-E1 (driver tag)"))
    let r = await run(["pair", "--irk-file", irk, "--device-id", "UNIT-R1", "--json", "--state-dir", state])
    #expect(r.status == 0, "\(r.err)")
    #expect(try JSONValue.parse(Data(r.out.utf8))["authentication"]?.stringValue == "rpa")
    let listed = await run(["pairs", "--json", "--state-dir", state])
    let array = try JSONValue.parse(Data(listed.out.utf8)).arrayValue ?? []
    #expect(array.map { $0["authentication"]?.stringValue } == ["eid", "rpa"])
    #expect(array.map { $0["deviceId"]?.stringValue } == ["UNIT-E1", "UNIT-R1"])
    let table = await run(["pairs", "--state-dir", state])
    #expect(table.out.contains("Eddystone-EID key #1"))
    for output in [e, r, listed, table] { outputs += output.out + output.err }
    expectNoKey(outputs)

    // The store is its owner's alone.
    var info = stat()
    #expect(stat(state + "/beaconbridge.sqlite", &info) == 0)
    #expect(info.st_mode & 0o077 == 0, "mode \(String(info.st_mode & 0o777, radix: 8))")

    // Unpaired, the key is gone from the file itself (secure_delete), not left in a free page.
    #expect(await run(["unpair", "--device-id", "UNIT-E1", "--state-dir", state]).status == 0)
    let bytes =
      try Data(contentsOf: URL(fileURLWithPath: state + "/beaconbridge.sqlite"))
      + ((try? Data(contentsOf: URL(fileURLWithPath: state + "/beaconbridge.sqlite-wal"))) ?? Data())
    #expect(bytes.range(of: Data(Self.eidKey.lowercased().utf8)) == nil)
    #expect(bytes.range(of: Data(Self.irk.utf8)) != nil, "the IRK stays while paired")
  }

  @Test func aKeyFileBreakingTheRuleIsRefusedWithoutItsText() async throws {
    let dir = scratchPath("bykey-bad")
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let state = dir + "/state"
    let cases: [(String, String)] = [
      (
        try keyFile(dir, "open.key", Self.irk, mode: 0o644),
        "can be read by every user (mode 0644); to fix: chmod 0600 \(dir)/open.key (the owner only)"
      ),
      // Some editors write a byte order mark: named, not counted as a character of the key.
      (
        try keyFile(dir, "bom.key", "\u{FEFF}" + Self.irk + "\n"),
        "starts with a UTF-8 byte order mark (EF BB BF), which is not part of a key"
      ),
      // Characters, not bytes: 31 digits and an "é" are 32 characters (33 bytes).
      (try keyFile(dir, "accent.key", String(Self.irk.dropLast()) + "é"), "is 32 hexadecimal digits"),
      (try keyFile(dir, "long.key", Self.irk + "é"), "a key is 32 hexadecimal digits, not 33 characters"),
      (try keyFile(dir, "empty.key", "\n"), "is empty"),
      (try keyFile(dir, "short.key", String(Self.irk.dropLast())), "does not hold a key"),
      (
        try keyFile(dir, "text.key", Self.irk.replacingOccurrences(of: "e", with: "g")), "does not hold a key"
      ),
      (dir, "not a regular file"),
    ]
    let fifo = dir + "/fifo.key"
    #expect(mkfifo(fifo, 0o600) == 0)
    // A link, and a file that is not there: the fix names the option, not the token's setting.
    let link = dir + "/link.key"
    #expect(symlink(try keyFile(dir, "real.key", Self.irk), link) == 0)
    let fixes: [(String, String)] = [
      (
        link,
        "is a symbolic link, which is not followed; to fix: point --eid-key-file or --irk-file at the file itself"
      ),
      (
        dir + "/missing.key", "does not exist; to fix: write the key into it (32 hex digits), then chmod 0600"
      ),
    ]
    for (path, problem) in cases + [(fifo, "is a FIFO")] + fixes {
      let result = await run(["pair", "--irk-file", path, "--device-id", "UNIT-R1", "--state-dir", state])
      #expect(result.status == 1, "\(path)")
      #expect(result.err.contains(problem), "\(path): \(result.err)")
      expectNoKey(result.out + result.err)
      #expect(!result.err.contains(String(Self.irk.dropLast())))
    }
  }

  @Test(arguments: [
    (["pair", "--eid-key-file", "k", "--device-id", "X"], "--rotation-exponent"),
    (
      [
        "pair", "--eid-key-file", "k", "--rotation-exponent", "16", "--beacon-clock", "1", "--device-id", "X",
      ], "--rotation-exponent"
    ),
    (["pair", "--eid-key-file", "k", "--rotation-exponent", "10", "--device-id", "X"], "--beacon-clock"),
    // A number that is not whole is said as such, not reported missing.
    (
      [
        "pair", "--eid-key-file", "k", "--rotation-exponent", "1.5", "--beacon-clock", "1", "--device-id",
        "X",
      ], "--rotation-exponent must be a whole number from 0 to 15, not 1.5"
    ),
    (
      [
        "pair", "--eid-key-file", "k", "--rotation-exponent", "3", "--beacon-clock", "7.25", "--device-id",
        "X",
      ], "--beacon-clock must be a whole number from 0 to 4294967295 (the beacon's clock now), not 7.25"
    ),
    (["pair", "--irk-file", "k", "--rotation-exponent", "10", "--device-id", "X"], "are for --eid-key-file"),
    (["pair", "--irk-file", "k", "--eid-key-file", "k", "--device-id", "X"], "not both"),
    (["pair", "--irk-file", "k"], "pair needs --device-id"),
  ])
  func usageErrors(argv: [String], message: String) async {
    let result = await run(argv)
    #expect(result.status == 64)
    #expect(result.err.contains(message), "\(result.err)")
  }
}
