import BeaconCore
import BeaconTestSupport
import BlueZTestSupport
import DBus
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Power cuts, not SIGKILLs (docs/reliability.md): the daemon runs with Tests/PowerCut/cutlog.so
/// preloaded, which logs every write and sync it makes in its state directory; it is killed at a
/// random moment while batches, pairings and fleet documents stream in, and
/// Tests/PowerCut/replay.py rebuilds the directory as a disk would hold it after a cut at that
/// moment (unsynced sectors lost, kept, reordered or garbled). The next run starts from that
/// directory. After every cut the store passes `integrity_check` and holds every batch and
/// pairing that was acknowledged (or the backend already has the batch), and the fleet document
/// it holds is one the fleet published, whole, no older than the last one answered `applied`; at
/// the end the backend has each batch exactly once by key.
/// `BEACONBRIDGE_POWER_CUTS` sets how many cuts each test makes (`make powercut CUTS=1000`;
/// `make test` runs 60).
@Suite(.tags(.process), .timeLimit(.minutes(60)))
struct PowerCutTests {
  static let root: URL = {
    var root = URL(fileURLWithPath: #filePath)
    while !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) {
      root.deleteLastPathComponent()
    }
    return root
  }()

  static let cuts = Int(ProcessInfo.processInfo.environment["BEACONBRIDGE_POWER_CUTS"] ?? "") ?? 60
  static let uuid = "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"

  struct CutResult: Decodable {
    var integrity: String
    var missing: [String]
    var unsynced: Int
    var kept: Int
    var torn: Int
    /// What the store holds of the fleet: nil when it has no tables yet.
    var fleet: FleetHeld?
  }

  struct FleetHeld: Decodable {
    var version: Int?
    var settings: String?
    /// The device IDs of the pairings by identity and by key, each sorted.
    var identity: [String]
    var keys: [String]
  }

  /// Builds the preload library into `dir`.
  static func buildCutlog(in dir: String) async throws -> String {
    let library = dir + "/cutlog.so"
    let source = root.appendingPathComponent("Tests/PowerCut/cutlog.c").path
    let built = try await runProcess(
      "/usr/bin/cc", ["-O2", "-shared", "-fPIC", "-o", library, source, "-ldl"])
    #expect(built.status == 0, "cc: \(built.stderr)")
    return library
  }

  /// The daemon run after run on one state directory, each run ended by a cut: the batches it
  /// streams, what was acknowledged, and the check after each cut.
  final class Bed: @unchecked Sendable {
    let fixture: BlueZFixture
    let backend: FakeBackend
    let work: String
    let dir: String
    let library: String
    let config: String
    let log: String
    let test = DaemonEndToEndTests()
    var generator: SeededGenerator
    var acknowledged: Set<Int> = []
    var attempted: Set<Int> = []
    var next = 0
    /// The trip the batches go to, whether it is open, and one whose end was asked but not
    /// answered (the daemon was cut), asked again at the next run.
    var trip = 1
    var started = false
    var ending: Int?
    /// This run sends no batch, so that no trip is open for the rest of it.
    var resting = false
    var totals = (unsynced: 0, kept: 0, torn: 0)

    init(_ name: String, seed: UInt64, config: (_ work: String, _ backend: URL) throws -> String) async throws
    {
      fixture = try await BlueZFixture.start()
      try await fixture.addAdapter("hci0")
      // The backend fails a third of posts, so batches wait in the outbox across cuts.
      backend = try await FakeBackend(["--fail-rate", "0.3", "--seed", "5"])
      work = try scratchDirectory(name)
      dir = work + "/state"
      try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
      chmod(dir, 0o700)
      library = try await PowerCutTests.buildCutlog(in: work)
      self.config = try config(work, backend.url)
      log = work + "/cut.log"
      generator = SeededGenerator(seed: seed)
    }

    deinit {
      fixture.stop()
      try? FileManager.default.removeItem(atPath: work)
    }

    var bus: String { fixture.bus.address }
    var preload: [String: String] { ["LD_PRELOAD": library, "CUTLOG_DIR": dir, "CUTLOG_FILE": log] }

    /// The CLI with the same preload: `pair` writes the store itself when the daemon is down,
    /// and those writes are on the same disk.
    func cli(_ arguments: [String]) async throws -> ProcessRun {
      try await runProcess(
        ScanCommandTests.binary, arguments,
        environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus, "BEACONBRIDGE_STATE_DIR": dir].merging(preload) { $1 })
    }

    func status() async -> JSONValue? {
      (try? await test.cli(["status", "--json"], bus: bus, dir: dir)).flatMap {
        $0.status == 0 ? try? JSONValue.parse(Data($0.stdout.utf8)) : nil
      }
    }

    func delivered() -> [String] {
      backend.received().filter { $0.status == "200" }.flatMap { request in
        (request.body["events"]?.arrayValue ?? []).compactMap { $0["n"]?.intValue }.map {
          PowerCutTests.marker(Int($0))
        }
      }
    }

    /// Runs the daemon `cuts` times, each run cut at a random moment: `step` does what the test
    /// adds to a run (a pairing, a document) while the daemon is up, then a few batches stream
    /// in. After each cut `find` names more texts the store must hold and `check` judges the
    /// rest; false stops the runs. Returns whether every cut passed (a failure is recorded as an
    /// issue).
    func run(
      cuts: Int,
      step: (_ cut: Int) async throws -> Void,
      find: () -> [String] = { [] },
      check: (_ cut: Int, _ result: CutResult) -> Bool = { _, _ in true }
    ) async throws -> Bool {
      for cut in 0..<cuts {
        let base = work + "/base"
        try? FileManager.default.removeItem(atPath: base)
        try FileManager.default.copyItem(atPath: dir, toPath: base)
        try? FileManager.default.removeItem(atPath: log)
        let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus, environment: preload)
        let pid = daemon.processIdentifier
        if Int.random(in: 0..<10, using: &generator) == 0 {
          // A cut while the daemon opens its store.
          try await Task.sleep(for: .milliseconds(Int.random(in: 0...300, using: &generator)))
        } else {
          try await waitUntil("the daemon answers status", timeout: .seconds(30)) { await status() != nil }
          let killAfter = Double.random(in: 0.0...0.4, using: &generator)
          let killer = Task {
            try? await Task.sleep(for: .seconds(killAfter))
            kill(pid, SIGKILL)
          }
          resting = false
          try await step(cut)
          if !resting { try await sendBatches() }
          await killer.value
        }
        kill(pid, SIGKILL)
        daemon.waitUntilExit()
        guard let result = try await cutAndCheck(cut, find: find()) else { return false }
        guard check(cut, result) else {
          keep(cut)
          return false
        }
        try FileManager.default.removeItem(atPath: dir)
        try FileManager.default.moveItem(atPath: work + "/after", toPath: dir)
        chmod(dir, 0o700)
      }
      return true
    }

    /// One to four batches, through the CLI, each acknowledged or not; the trip started first.
    func sendBatches() async throws {
      for _ in 0..<Int.random(in: 1...4, using: &generator) {
        if !started {
          let start = try await test.cli(["trip", "start", "--trip-id", "t\(trip)"], bus: bus, dir: dir)
          guard start.status == 0 || start.stderr.contains("already started") else { break }
          started = true
        }
        let n = next
        next += 1
        attempted.insert(n)
        // Padding makes the write-ahead log pass its checkpoint size now and then.
        let events = #"[{"type":"braking","n":\#(n),"pad":"\#(String(repeating: "x", count: 1_500))"}]"#
        let sent = try await test.cli(
          ["trip", "events", "--trip-id", "t\(trip)", "-"], bus: bus, dir: dir, stdin: events)
        guard sent.status == 0 else { break }
        acknowledged.insert(n)
      }
    }

    /// Ends the open trip (or the one whose end was not answered): the next batch starts another.
    func endTrip() async throws {
      guard let ended = ending ?? (started ? trip : nil) else { return }
      ending = ended
      if started && ended == trip {
        trip += 1
        started = false
      }
      let end = try await test.cli(["trip", "end", "--trip-id", "t\(ended)"], bus: bus, dir: dir)
      // Answered: ended now, before the cut, or never started (its start was cut).
      if end.status == 0 || end.stderr.contains("has already ended") || end.stderr.contains("has started") {
        ending = nil
      }
    }

    /// The cut: the state directory as the disk held it goes to `work/after`, and the store
    /// there is checked. Nil (with an issue recorded) when it fails.
    func cutAndCheck(_ cut: Int, find: [String]) async throws -> CutResult? {
      let deliveredFile = work + "/delivered.txt"
      try delivered().joined(separator: "\n").write(toFile: deliveredFile, atomically: true, encoding: .utf8)
      let replay = PowerCutTests.root.appendingPathComponent("Tests/PowerCut/replay.py").path
      var arguments = [
        replay, "--base", work + "/base", "--log", log, "--out", work + "/after", "--seed", String(cut),
        "--delivered", deliveredFile,
      ]
      for text in acknowledged.sorted().map(PowerCutTests.marker) + find { arguments += ["--find", text] }
      let rebuilt = try await runProcess("/usr/bin/python3", arguments)
      try #require(rebuilt.status == 0, "replay.py: \(rebuilt.stderr)")
      let result = try JSONDecoder().decode(CutResult.self, from: Data(rebuilt.stdout.utf8))
      totals = (totals.unsynced + result.unsynced, totals.kept + result.kept, totals.torn + result.torn)
      // No store at all only before the first run made one; anything acknowledged since then is
      // in `missing`.
      guard (result.integrity == "ok" || result.integrity == "no store") && result.missing.isEmpty else {
        Issue.record(
          "cut \(cut): integrity_check says \(result.integrity); acknowledged but gone: \(result.missing) (\(keep(cut)))"
        )
        return nil
      }
      return result
    }

    /// Keeps the directory before, the log, and the directory after the cut for a look; says how
    /// to rebuild it.
    @discardableResult func keep(_ cut: Int) -> String {
      let kept = NSTemporaryDirectory() + "powercut-failure-\(cut)"
      try? FileManager.default.removeItem(atPath: kept)
      try? FileManager.default.copyItem(atPath: work, toPath: kept)
      return "replay.py --base \(kept)/base --log \(kept)/cut.log --seed \(cut) rebuilds it"
    }

    /// Power stays on: the daemon runs without the preload until `ready`, then the outbox drains.
    /// Returns the daemon, still running.
    func drain(until ready: () async throws -> Bool = { true }) async throws -> Process {
      let daemon = try launchDaemon(config: config, stateDirectory: dir, bus: bus)
      let count = acknowledged.count
      try await waitUntil("the outbox drained", timeout: .seconds(120)) {
        let undelivered = await status()?["outbox"]?["undelivered"]?.intValue
        guard undelivered == 0 && Set(delivered()).count >= count else { return false }
        return try await ready()
      }
      return daemon
    }

    /// The backend has each acknowledged batch exactly once by key, and nothing else. Returns
    /// how many keys it has and how many batches were lost.
    func checkDelivery() -> (keys: Int, lost: Int) {
      var byKey: [String: JSONValue] = [:]
      for request in backend.received() where request.status == "200" {
        guard let key = request.key else { continue }
        if let earlier = byKey[key] {
          #expect(earlier == request.body, "key \(key) carried two different batches")
        }
        byKey[key] = request.body
      }
      var seen: [Int: Int] = [:]
      for body in byKey.values {
        for event in body["events"]?.arrayValue ?? [] {
          if let n = event["n"]?.intValue { seen[Int(n), default: 0] += 1 }
        }
      }
      let missing = acknowledged.subtracting(seen.keys)
      #expect(missing.isEmpty, "acknowledged but never delivered: \(missing.sorted())")
      #expect(
        seen.values.allSatisfy { $0 == 1 }, "a batch was sent under two keys: \(seen.filter { $0.value > 1 })"
      )
      #expect(Set(seen.keys).isSubset(of: attempted), "the backend got batches nobody sent")
      return (byKey.count, missing.count)
    }

    var sectors: String {
      "unsynced sectors at the cuts \(totals.unsynced) (kept \(totals.kept), garbled \(totals.torn))"
    }
  }

  @Test func powerCutsLoseNothingAcknowledged() async throws {
    let bed = try await Bed("powercut", seed: 1_355) { work, url in
      try fallbackConfiguration(in: work, upload: Self.upload(url))
    }
    var pairings: [String] = []
    let passed = try await bed.run(
      cuts: Self.cuts,
      step: { cut in
        // A pairing by identity or by key now and then; the key goes to the store's own table.
        switch Int.random(in: 0..<6, using: &bed.generator) {
        case 0, 1:
          let device = "PC-\(cut)"
          let paired = try await bed.cli([
            "pair", "--uuid", Self.uuid, "--major", "9", "--minor", String(cut), "--device-id", device,
          ])
          if paired.status == 0 { pairings.append(device) }
        case 2:
          // A key of its own: pairing a key again moves it to the new device ID.
          let device = "EID-\(cut)"
          let keyFile = bed.work + "/eid.key"
          let digits = String(cut, radix: 16)
          try ("a" + String(repeating: "0", count: 31 - digits.count) + digits + "\n").write(
            toFile: keyFile, atomically: true, encoding: .utf8)
          chmod(keyFile, 0o600)
          let paired = try await bed.cli([
            "pair", "--eid-key-file", keyFile, "--rotation-exponent", "10", "--beacon-clock", String(cut),
            "--device-id", device,
          ])
          if paired.status == 0 { pairings.append(device) }
        default: break
        }
      },
      find: { pairings.map { "'\($0)'" } })
    guard passed else { return }

    let daemon = try await bed.drain()
    let pairs = try await bed.test.cli(["pairs", "--json"], bus: bed.bus, dir: bed.dir)
    for device in pairings { #expect(pairs.stdout.contains("\"\(device)\""), "pairing \(device) was lost") }
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon), "daemon did not exit in time")
    let (keys, lost) = bed.checkDelivery()
    print(
      "power cuts: \(Self.cuts) cuts, \(bed.acknowledged.count) of \(bed.attempted.count) batches and "
        + "\(pairings.count) pairings acknowledged, \(keys) delivered by key, \(lost) lost; \(bed.sectors)")
  }

  /// One desired document as the fleet publishes it, and what the store must hold once it is
  /// applied.
  struct Document {
    var version: Int
    var identity: [String]
    var keys: [String]
    var switchMargin: Int
    var json: String
  }

  /// The fleet's desired documents while the power is cut: each run may publish a new version
  /// (pairings by identity and by key, a setting) or end the trip, so that a document waits for
  /// the trip's end or is applied at once; an EID beacon that most documents pair by key
  /// advertises meanwhile. After every cut the store holds one published version whole (its
  /// pairings, keys and setting, and nothing else), never older than the last one the box
  /// answered `applied` before the cut.
  @Test func powerCutsKeepEachFleetDocumentWholeOrNotAtAll() async throws {
    let pki = try TestPKI()
    defer { try? FileManager.default.removeItem(atPath: pki.dir) }
    let (broker, tlsPort) = try MosquittoBroker.withTLS(pki)
    let bed = try await Bed("powercut-fleet", seed: 2_024) { work, url in
      try fallbackConfiguration(
        in: work, upload: Self.upload(url) + "\nCAFile = \(pki.ca)",
        extra: """
          [MQTT]
          ClientId = van-cut
          KeepAlive = 5
          [Fleet]
          BoxId = van-cut
          URL = mqtts://127.0.0.1:\(tlsPort)
          """)
    }
    let reported = try MQTTWatcher(broker, topic: "fleet/van-cut/config/reported")
    /// The highest version the box has answered `applied`.
    func answered() -> Int {
      reported.messages.filter { $0.payload["state"]?.stringValue == "applied" }
        .compactMap { $0.payload["version"]?.intValue }.map(Int.init).max() ?? 0
    }
    // The oracle's EID beacon, paired by key in most documents: the daemon resolves it and keeps
    // its clock, across documents that keep the key.
    let vector = try OracleVectors.firstEID()
    let beacon = try await bed.fixture.addDevice("hci0", "C0:FF:EE:00:0E:02")
    let serviceData: DBusValue = .dictionary(
      key: "s", value: "v",
      [.init(.string(ServiceUUID.eddystone.description), .variant(.bytes([0x30, 0xEB] + vector.eid)))])

    var documents: [Int: Document] = [:]
    var published = 0
    /// Publishes the next version; `beacon` says whether it pairs the EID beacon (at random when
    /// nil).
    func publish(beacon: Bool? = nil) async throws {
      let version = published + 1
      var identity: [String] = []
      var pairings: [String] = []
      for i in 0..<Int.random(in: 0...3, using: &bed.generator) {
        identity.append("PC-\(version)-\(i)")
        pairings.append(
          #"{"uuid":"\#(Self.uuid)","major":\#(version % 65_536),"minor":\#(i),"deviceId":"PC-\#(version)-\#(i)"}"#
        )
      }
      var keys: [String] = []
      if beacon ?? Bool.random(using: &bed.generator) {
        keys.append("UNIT-E1")
        pairings.append(
          #"{"eid":{"identityKey":"\#(vector.identityKey)","rotationExponent":\#(vector.rotationExponent),"beaconClock":\#(vector.beaconClock)},"deviceId":"UNIT-E1"}"#
        )
      }
      if Bool.random(using: &bed.generator) {
        // A key of this version's own.
        let digits = String(version, radix: 16)
        let key = "b" + String(repeating: "0", count: 31 - digits.count) + digits
        keys.append("EID-\(version)")
        pairings.append(
          #"{"eid":{"identityKey":"\#(key)","rotationExponent":10,"beaconClock":\#(version)},"deviceId":"EID-\#(version)"}"#
        )
      }
      if Int.random(in: 0..<4, using: &bed.generator) == 0 {
        let digits = String(version, radix: 16)
        keys.append("IRK-\(version)")
        pairings.append(
          #"{"irk":"c\#(String(repeating: "0", count: 31 - digits.count) + digits)","deviceId":"IRK-\#(version)"}"#
        )
      }
      let margin = version % 50 + 1
      let json =
        #"{"version":\#(version),"pairings":[\#(pairings.joined(separator: ","))],"settings":{"ActiveBeacon":{"switchMargin":\#(margin)}}}"#
      // Counted before it is sent: the box may apply it before mosquitto_pub returns.
      documents[version] = Document(
        version: version, identity: identity.sorted(), keys: keys.sorted(), switchMargin: margin, json: json)
      published = version
      try await broker.publish("fleet/van-cut/config/desired", json)
    }

    /// The version the store held after each cut, and the last one answered `applied` before it.
    var held: [Int] = []
    var answeredBefore: [Int] = []
    let passed = try await bed.run(
      cuts: Self.cuts,
      step: { _ in
        try? await bed.fixture.advertise(beacon, ["ServiceData": serviceData, "RSSI": .int16(-60)])
        if bed.ending != nil { try await bed.endTrip() }
        switch Int.random(in: 0..<8, using: &bed.generator) {
        case 0, 1: try await publish()
        case 2, 3:
          // No trip open for the rest of the run: applied at once.
          try await bed.endTrip()
          bed.resting = true
          try await publish()
        case 4:
          // The document waiting for the trip's end is applied.
          try await bed.endTrip()
          bed.resting = Bool.random(using: &bed.generator)
        default: break
        }
      },
      check: { cut, result in
        let acknowledged = answered()
        let version = result.fleet?.version ?? 0
        held.append(version)
        answeredBefore.append(acknowledged)
        guard version >= acknowledged, version <= published else {
          Issue.record(
            "cut \(cut): the store holds version \(version); applied before the cut: \(acknowledged)")
          return false
        }
        let identity = result.fleet?.identity ?? []
        let keys = result.fleet?.keys ?? []
        guard let document = documents[version] else {
          #expect(
            identity.isEmpty && keys.isEmpty, "cut \(cut): pairings with no document: \(identity) \(keys)")
          return identity.isEmpty && keys.isEmpty
        }
        // The store keeps the settings as a list of section, key and value.
        let settings = (result.fleet?.settings).flatMap { try? JSONValue.parse(Data($0.utf8)) }
        let setting: JSONValue = .object([
          "section": .string("ActiveBeacon"), "key": .string("switchMargin"),
          "value": .string(String(document.switchMargin)),
        ])
        let whole = identity == document.identity && keys == document.keys && settings == .array([setting])
        #expect(
          whole,
          "cut \(cut): version \(version) is not whole: pairings \(identity), keys \(keys), settings \(String(describing: result.fleet?.settings)); it has \(document.json)"
        )
        return whole
      })
    guard passed else { return }

    // Power stays on: the trip ends, a last version is applied, and the outbox drains.
    if bed.started || bed.ending != nil {
      let daemon = try launchDaemon(config: bed.config, stateDirectory: bed.dir, bus: bed.bus)
      try await waitUntil("the daemon answers status", timeout: .seconds(30)) { await bed.status() != nil }
      // A trip whose end the cut left unanswered, and the one opened after it.
      for _ in 0..<2 where bed.started || bed.ending != nil { try await bed.endTrip() }
      #expect(!bed.started && bed.ending == nil, "the last trips did not end")
      kill(daemon.processIdentifier, SIGTERM)
      #expect(await waitForExit(daemon), "daemon did not exit in time")
    }
    // The last version pairs the EID beacon: a key the cuts left in the store (or, when the
    // version before did not pair it, the new one) resolves it.
    try await publish(beacon: true)
    let daemon = try await bed.drain { answered() == published }
    let pairs = try await bed.test.cli(["pairs", "--json"], bus: bed.bus, dir: bed.dir)
    let devices = (try JSONValue.parse(Data(pairs.stdout.utf8)).arrayValue ?? []).compactMap {
      $0["deviceId"]?.stringValue
    }
    let last = try #require(documents[published])
    #expect(devices.sorted() == (last.identity + last.keys).sorted(), "\(pairs.stdout)")
    try await waitUntil("the EID beacon resolved by the last version's key", timeout: .seconds(30)) {
      try await bed.fixture.advertise(beacon, ["ServiceData": serviceData, "RSSI": .int16(-60)])
      let active = await bed.status()?["activeBeacon"]
      return active?["authentication"]?.stringValue == "eid" && active?["deviceId"]?.stringValue == "UNIT-E1"
    }
    kill(daemon.processIdentifier, SIGTERM)
    #expect(await waitForExit(daemon), "daemon did not exit in time")
    let (keys, lost) = bed.checkDelivery()
    let changed = zip(held, held.dropFirst()).filter { $0 != $1 }.count
    let acknowledgedThenCut = Set(answeredBefore).subtracting([0]).count
    print(
      "power cuts with the fleet: \(Self.cuts) cuts, \(published) documents published, \(acknowledgedThenCut) "
        + "answered applied before a cut, the version held changed at \(changed) cuts; \(bed.acknowledged.count) of "
        + "\(bed.attempted.count) batches acknowledged, \(keys) delivered by key, \(lost) lost; \(bed.sectors)"
    )
  }

  /// The `[Upload]` lines: quick retries, so that batches the backend refused go out again soon.
  static func upload(_ url: URL) -> String {
    """
    postRetryInitial = 0.05
    postRetryMax = 0.5
    Timeout = 5
    URL = \(url.absoluteString)
    """
  }

  /// The text that stands for batch `n` in the store's dump and the backend's log.
  static func marker(_ n: Int) -> String { #""n":\#(n),"pad""# }
}
