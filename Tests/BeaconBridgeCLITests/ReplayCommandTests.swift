import BeaconBridgeCLI
import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

/// `replay` as a user runs it: a capture written to a file, through the CLI.
@Suite struct ReplayCommandTests {
  /// Writes a btsnoop file by hand (BlueZ src/shared/btsnoop.h: big-endian fields, timestamps in
  /// microseconds since 0 AD), so the test does not lean on the reader's own encoder.
  struct Capture {
    /// The header: magic, version 1, datalink 2001.
    var bytes: [UInt8] = Array("btsnoop".utf8) + [0, 0, 0, 0, 1, 0, 0, 0x07, 0xD1]

    static func u32(_ v: UInt32) -> [UInt8] {
      [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
    }

    /// The first record's time, in seconds since 1970.
    var base: UInt64 = 1_700_000_000

    mutating func record(index: UInt16, opcode: UInt16, seconds: Double, data: [UInt8]) {
      let time = UInt64(0x00dc_ddb3_0f2f_8000) + base * 1_000_000 + UInt64(seconds * 1_000_000)
      bytes += Self.u32(UInt32(data.count)) + Self.u32(UInt32(data.count))
      bytes += Self.u32(UInt32(index) << 16 | UInt32(opcode)) + Self.u32(0)
      bytes += Self.u32(UInt32(time >> 32)) + Self.u32(UInt32(time & 0xFFFF_FFFF)) + data
    }

    /// An LE Advertising Report event with one report per (address, AD data, RSSI).
    static func reports(_ list: [(BluetoothAddress, [UInt8], Int8)]) -> [UInt8] {
      var p: [UInt8] = [0x02, UInt8(list.count)]
      for (address, data, rssi) in list {
        p += [0x03, 0x01] + address.bytes.reversed() + [UInt8(data.count)] + data + [UInt8(bitPattern: rssi)]
      }
      return [0x3E, UInt8(p.count)] + p
    }

    func write() throws -> String {
      let path = FileManager.default.temporaryDirectory.appendingPathComponent(
        "replay-\(UUID().uuidString).btsnoop"
      ).path
      try Data(bytes).write(to: URL(fileURLWithPath: path))
      return path
    }
  }

  /// The van's beacon at 1 Hz for 40 s on hci1, with the other van's beacon in the same events
  /// for the first 5 s (several reports per event); hci0 hears a stranger that must not count.
  static func vanCapture() -> Capture {
    var capture = Capture()
    capture.record(index: 0, opcode: 0, seconds: 0, data: [UInt8](repeating: 0, count: 16))
    capture.record(index: 1, opcode: 0, seconds: 0, data: [UInt8](repeating: 0, count: 16))
    let van = Fixtures.iBeaconPDU(Fixtures.vanBeacon)
    let other = Fixtures.iBeaconPDU(Fixtures.otherVanBeacon)
    for second in 1...40 {
      var list: [(BluetoothAddress, [UInt8], Int8)] = [(Fixtures.vanAddress, van, -60)]
      if second <= 5 { list.append((Fixtures.otherVanAddress, other, -85)) }
      capture.record(index: 1, opcode: 3, seconds: Double(second), data: Capture.reports(list))
    }
    let stranger = Fixtures.iBeaconPDU(Fixtures.strangerBeacon)
    capture.record(
      index: 0, opcode: 3, seconds: 2, data: Capture.reports([(Fixtures.strangerAddress, stranger, -40)]))
    capture.record(index: 1, opcode: 3, seconds: 60, data: [0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00])
    return capture
  }

  static func run(_ argv: [String]) async -> (status: Int32, out: String, err: String) {
    let console = CapturingConsole()
    let status = await CLI.main(argv, console: console)
    return (status, console.stdout, console.stderr)
  }

  @Test func replaysACaptureAsJSONLines() async throws {
    let path = try Self.vanCapture().write()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let pair = "\(Fixtures.fleet.uuidString):1:7=UNIT-0042"
    let result = await Self.run(["replay", path, "--json", "--pair", pair])
    #expect(result.status == 0, "\(result.err)")
    let lines = try result.out.split(separator: "\n").map { try JSONValue.parse(Data($0.utf8)) }
    let entered = lines.filter { $0["type"]?.stringValue == "beaconEntered" }
    #expect(entered.count == 2)
    for line in entered {
      #expect(line["uuid"]?.stringValue == Fixtures.fleet.uuidString)
      #expect(line["major"]?.intValue == 1)
    }
    #expect(Set(entered.compactMap { $0["minor"]?.intValue }) == [7, 9])
    #expect(entered.first?["at"]?.doubleValue == 1)
    // The other van's beacon leaves after its last report at 5 s, the van's after its last at
    // 40 s (the capture runs to 60 s).
    let exited = lines.filter { $0["type"]?.stringValue == "beaconExited" }
    #expect(exited.map { $0["minor"]?.intValue } == [9, 7])
    #expect((exited.last?["at"]?.doubleValue ?? 0) > 40)
    let active = lines.filter { $0["type"]?.stringValue == "activeBeaconChanged" }
    #expect(active.map { $0["deviceId"]?.stringValue } == ["UNIT-0042"])
    // Nothing from hci0's stranger.
    #expect(!result.out.contains(Fixtures.other.uuidString))
    #expect((lines.last?["at"]?.doubleValue ?? 0) <= 60)
  }

  /// With the box's store, a capture of an Eddystone-EID beacon resolves to its pairing by key,
  /// at the capture's own time: the pairing's clock offset is from the box's clock.
  @Test func resolvesAnEIDBeaconWithTheBoxsPairings() async throws {
    let found = try OracleVectors.firstEID()
    let vector = (key: found.identityKey, k: found.rotationExponent, clock: found.beaconClock, eid: found.eid)
    let dir = scratchPath("replay-eid")
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let keyFile = dir + "/eid.key"
    try Data((vector.key + "\n").utf8).write(to: URL(fileURLWithPath: keyFile))
    #expect(chmod(keyFile, 0o600) == 0)
    let state = dir + "/state"
    let paired = await Self.run([
      "pair", "--eid-key-file", keyFile, "--rotation-exponent", "\(vector.k)", "--beacon-clock",
      "\(vector.clock)", "--device-id", "UNIT-E1", "--state-dir", state,
    ])
    #expect(paired.status == 0, "\(paired.err)")
    // Captured now, so the beacon's clock in the capture is the one paired (the window is
    // 2^K s long; the 20 s capture stays in it).
    var capture = Capture()
    capture.base = UInt64(Date().timeIntervalSince1970.rounded(.down))
    capture.record(index: 0, opcode: 0, seconds: 0, data: [UInt8](repeating: 0, count: 16))
    let address = try #require(BluetoothAddress("C0:FF:EE:00:0E:01"))
    let frame: [UInt8] =
      [0x02, 0x01, 0x06, 0x03, 0x03, 0xAA, 0xFE, 0x0D, 0x16, 0xAA, 0xFE, 0x30, 0xC5] + vector.eid
    for second in 1...20 {
      capture.record(
        index: 0, opcode: 3, seconds: Double(second), data: Capture.reports([(address, frame, -60)]))
    }
    let path = try capture.write()
    defer { try? FileManager.default.removeItem(atPath: path) }

    let result = await Self.run(["replay", path, "--json", "--state-dir", state])
    #expect(result.status == 0, "\(result.err)")
    let lines = try result.out.split(separator: "\n").map { try JSONValue.parse(Data($0.utf8)) }
    let entered = lines.filter { $0["type"]?.stringValue == "beaconEntered" }
    #expect(entered.map { $0["authentication"]?.stringValue } == ["eid"], "\(result.out)")
    let active = lines.filter { $0["type"]?.stringValue == "activeBeaconChanged" }
    #expect(active.map { $0["deviceId"]?.stringValue } == ["UNIT-E1"], "\(result.out)")
    #expect(!result.out.lowercased().contains(vector.key.lowercased()))

    // Without the store the same capture is an unknown EID: nothing is paired.
    let bare = await Self.run(["replay", path, "--json"])
    #expect(bare.status == 0)
    #expect(!bare.out.contains("UNIT-E1"))
    // A mistyped store is said, and nothing is made.
    let typo = await Self.run(["replay", path, "--state-dir", dir + "/typo"])
    #expect(typo.status == 1)
    #expect(typo.err.contains("typo was not found"), "\(typo.err)")
    #expect(!FileManager.default.fileExists(atPath: dir + "/typo"))
  }

  @Test func printsAReadableSummary() async throws {
    let path = try Self.vanCapture().write()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let result = await Self.run(["replay", path])
    #expect(result.status == 0, "\(result.err)")
    #expect(result.out.contains("controller hci1"))
    #expect(result.out.contains("45 advertisements"))
    let table = try #require(
      result.out.components(separatedBy: "BEACONS FOUND").last?.components(separatedBy: "EVENTS").first)
    let rows = table.split(separator: "\n").filter { $0.contains(Fixtures.fleet.uuidString) }
    #expect(rows.count == 2)
    #expect(rows.first?.contains("40") == true)  // sightings of 1/7
    #expect(result.out.contains("beacon entered"))
  }

  @Test func anotherControllerOnRequest() async throws {
    let path = try Self.vanCapture().write()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let result = await Self.run(["replay", path, "--json", "--adapter", "hci0"])
    #expect(result.status == 0)
    #expect(result.out.contains(Fixtures.other.uuidString))
    #expect(!result.out.contains(Fixtures.fleet.uuidString))
    let none = await Self.run(["replay", path, "--adapter", "hci3"])
    #expect(none.status == 1)
    #expect(none.err.contains("hci3 reported no advertisements; hci1, hci0 did"))
  }

  @Test func malformedEventsAreSkippedWithAWarning() async throws {
    var capture = Self.vanCapture()
    capture.record(
      index: 1, opcode: 3, seconds: 41,
      data: [0x3E, 0x0C, 0x02, 0x01, 0x03, 0x01, 1, 2, 3, 4, 5, 6, 0x1F, 0x02])
    let path = try capture.write()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let result = await Self.run(["replay", path, "--json"])
    #expect(result.status == 0)
    #expect(result.err.contains("skipped a malformed HCI event"))
    #expect(result.err.contains("Data_Length 31"))
  }

  @Test(arguments: [
    (Array("{\"events\": []}".utf8), "not a btsnoop capture"),
    (Array(vanCapture().bytes.dropLast(3)), "truncated btsnoop capture"),
    (Array(vanCapture().bytes.prefix(10)), "truncated btsnoop capture"),
    (Array("btsnoop".utf8) + [0, 0, 0, 0, 1, 0, 0, 0, 1], "unsupported btsnoop capture"),
  ])
  func badFilesFailWithOneError(bytes: [UInt8], message: String) async throws {
    var capture = Capture()
    capture.bytes = bytes
    let path = try capture.write()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let result = await Self.run(["replay", path])
    #expect(result.status == 1)
    #expect(result.out.isEmpty)
    #expect(result.err.split(separator: "\n").count == 1)
    #expect(result.err.contains(message), "\(result.err)")
  }

  @Test func missingFile() async {
    let result = await Self.run(["replay", "/nonexistent/capture.btsnoop"])
    #expect(result.status == 1)
    #expect(result.err.contains("no such file"))
  }

  @Test(arguments: [
    (["replay"], "missing capture FILE"),
    (["replay", "a", "--adapter", "usb0"], "--adapter: adapter \"usb0\" is not valid"),
    (["replay", "a", "--pair", "nonsense"], "--pair must be"),
    (
      ["replay", "a", "--pair", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0:x=ID"],
      "--pair: major \"x\" must be a whole number from 0 to 65535"
    ),
  ])
  func usageErrors(argv: [String], message: String) async {
    let result = await Self.run(argv)
    #expect(result.status == 64)
    #expect(result.err.contains(message), "\(result.err)")
  }

  @Test func parsesPairsAndAdapter() throws {
    guard
      case .command(let command) = try CLI.parse([
        "replay", "c.btsnoop", "--adapter=hci2", "--pair", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0=A",
        "--pair", "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0:1:7=B",
      ]), let replay = command as? ReplayCommand
    else {
      Issue.record("expected replay")
      return
    }
    #expect(replay.adapter == 2)
    #expect(replay.file == "c.btsnoop")
    #expect(replay.pairings.map(\.deviceId) == ["A", "B"])
    #expect(replay.pairings[1].minor == 7)
    #expect(replay.pairings[0].major == nil)
    #expect(CLI.mainHelp.contains("replay"))
  }
}
