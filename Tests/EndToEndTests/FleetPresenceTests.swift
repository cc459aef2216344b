import BeaconCore
import BeaconTestSupport
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The box's presence on the fleet's broker (`[Fleet]`, docs/fleet.md): a retained birth message
/// on connect, the last will when the daemon vanishes, a clean offline message when it stops.
/// Real daemon, real Mosquitto on loopback.
@Suite(.tags(.process), .serialized, .timeLimit(.minutes(3)))
struct FleetPresenceTests {
  static let keepAlive = 5

  /// A daemon with `[Fleet]` on `broker`, box `boxId`, and a 5 s keep-alive.
  static func configuration(in dir: String, broker: MosquittoBroker, boxId: String, extra: String = "")
    throws -> String
  {
    let path = dir + "/beaconbridge.conf"
    try """
    [Trips]
    unresolvedPolicy = fallback
    fallbackDeviceId = DEPOT-7
    lateWindow = 0
    [MQTT]
    ClientId = \(boxId)
    KeepAlive = \(keepAlive)
    [Fleet]
    BoxId = \(boxId)
    URL = mqtt://127.0.0.1:\(broker.port)
    \(extra)
    """.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  func states(_ watcher: MQTTWatcher) -> [String] {
    watcher.messages.map { message in
      let state = message.payload["state"]?.stringValue ?? "?"
      guard state == "offline" else { return state }
      return message.payload["clean"] == .bool(true) ? "offline-clean" : "offline-vanished"
    }
  }

  @Test func birthOnStartAndACleanOfflineOnStop() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let broker = try MosquittoBroker()
    let dir = try scratchDirectory("fleet-presence")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let watcher = try MQTTWatcher(broker, topic: "fleet/van-1/status")
    let config = try Self.configuration(in: dir, broker: broker, boxId: "van-1")
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
    try await waitUntil("the birth message; log:\n\(daemon.log)\n\(broker.log)") {
      states(watcher) == ["online"]
    }
    let birth = try #require(watcher.messages.first)
    #expect(birth.payload["version"]?.stringValue == "0.1.0")
    #expect(birth.payload["configVersion"] == .null)
    let since = try #require(birth.payload["since"]?.stringValue)
    #expect(since.hasPrefix("20") && since.hasSuffix("Z"), "\(since)")
    // Retained: a backend that subscribes later still sees the box online.
    #expect(try await broker.retained("fleet/van-1/status")?["state"]?.stringValue == "online")
    // Its session has the last will.
    #expect(broker.log.contains("as van-1-fleet (p5, c0, k\(Self.keepAlive)"), "\(broker.log)")

    #expect(await daemon.stop(), "\(daemon.log)")
    try await waitUntil("the clean offline message: \(states(watcher))") {
      states(watcher) == ["online", "offline-clean"]
    }
    // The DISCONNECT reached the broker before the socket closed: the will was discarded, and
    // the retained message a backend reads now is the clean one.
    let retained = try #require(try await broker.retained("fleet/van-1/status"))
    #expect(retained["state"]?.stringValue == "offline" && retained["clean"] == .bool(true), "\(retained)")
    #expect(states(watcher) == ["online", "offline-clean"])
  }

  @Test func theLastWillWhenTheDaemonIsKilled() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let broker = try MosquittoBroker()
    let dir = try scratchDirectory("fleet-will")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let watcher = try MQTTWatcher(broker, topic: "fleet/van-2/status")
    let config = try Self.configuration(in: dir, broker: broker, boxId: "van-2")
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
    try await waitUntil("the birth message; log:\n\(daemon.log)") { states(watcher) == ["online"] }
    let killed = ContinuousClock.now
    kill(daemon.process.processIdentifier, SIGKILL)
    try await waitUntil("the last will: \(states(watcher))\n\(broker.log)", timeout: .seconds(30)) {
      states(watcher) == ["online", "offline-vanished"]
    }
    let took = ContinuousClock.now - killed
    print("fleet: the last will reached a subscriber \(took) after kill -9")
    #expect(took < .milliseconds(Self.keepAlive * 1500), "the will came \(took) after the kill")
    #expect(try await broker.retained("fleet/van-2/status")?["clean"] == .bool(false))
  }

  /// A box whose connection goes silent (frozen with SIGSTOP: the socket stays open, no
  /// keep-alive pings) is declared gone by the broker, and its will published. MQTT 5 section
  /// 3.1.2.10 says after 1.5 times the keep-alive; Mosquitto 2.0.11 takes longer (11 s for a
  /// 5 s keep-alive here, its keep-alive buckets), so the bound is 3 times: the box's side, the
  /// will and the keep-alive it asked for, is what this test holds.
  @Test func theLastWillWhenTheBoxGoesSilent() async throws {
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let broker = try MosquittoBroker()
    let dir = try scratchDirectory("fleet-silent")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let watcher = try MQTTWatcher(broker, topic: "fleet/van-3/status")
    let config = try Self.configuration(in: dir, broker: broker, boxId: "van-3")
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
    defer {
      kill(daemon.process.processIdentifier, SIGCONT)
      kill(daemon.process.processIdentifier, SIGKILL)
    }
    try await waitUntil("the birth message; log:\n\(daemon.log)") { states(watcher) == ["online"] }
    let frozen = ContinuousClock.now
    kill(daemon.process.processIdentifier, SIGSTOP)
    try await waitUntil("the last will: \(states(watcher))\n\(broker.log)", timeout: .seconds(30)) {
      states(watcher) == ["online", "offline-vanished"]
    }
    let took = ContinuousClock.now - frozen
    print("fleet: the last will reached a subscriber \(took) after the box went silent")
    #expect(
      took < .seconds(Self.keepAlive * 3),
      "the will came \(took) after the box froze\n\(broker.log.suffix(3000))")
  }
}
