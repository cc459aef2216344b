import BeaconTestSupport
import DBusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `pair --irk-file` run by a user who is not root, against the real daemon: its PairWithKey
/// refuses (only root may pair by key), and the CLI says so, not that joining group beaconbridge
/// would help (dbus/org.beaconbridge.conf lets that group call the rest of Bridge1, never
/// PairWithKey).
@Suite(.tags(.process), .timeLimit(.minutes(2)))
struct PairWithKeyAccessTests {
  @Test func aCallerWhoIsNotRootIsToldOnlyRootMayPairByKey() async throws {
    try #require(geteuid() == 0, "running the CLI as another user needs root")
    let bus = try PrivateBus.start()
    defer { bus.stop() }
    let dir = try scratchDirectory("pwk-access")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    // The other user reads its own key file in here.
    #expect(chmod(dir, 0o755) == 0)
    let config = dir + "/beaconbridge.conf"
    try "".write(toFile: config, atomically: true, encoding: .utf8)
    let daemon = try MonitoredDaemon(config: config, stateDirectory: dir, bus: bus.address)
    try await waitUntil("the daemon serves its API; log:\n\(daemon.log)", timeout: .seconds(20)) {
      (try? await DaemonEndToEndTests().cli(["status"], bus: bus.address, dir: dir).status) == 0
    }
    let key = dir + "/irk.key"
    try "00112233445566778899aabbccddeeff\n".write(toFile: key, atomically: true, encoding: .utf8)
    let nobody = try #require(getpwnam("nobody"))
    #expect(chown(key, nobody.pointee.pw_uid, nobody.pointee.pw_gid) == 0 && chmod(key, 0o600) == 0)
    let run = try await runProcess(
      "/usr/bin/setpriv",
      [
        "--reuid=\(nobody.pointee.pw_uid)", "--regid=\(nobody.pointee.pw_gid)", "--clear-groups",
        ScanCommandTests.binary, "pair", "--irk-file", key, "--device-id", "UNIT-R1",
      ], environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
    #expect(run.status == 1)
    #expect(run.stderr.contains("PairWithKey is for root only"), "\(run.stderr)")
    #expect(run.stderr.contains("run it as root (sudo): only root may pair by key"), "\(run.stderr)")
    #expect(!run.stderr.contains("group"), "\(run.stderr)")
    #expect(await daemon.stop(), "log:\n\(daemon.log)")
  }
}
