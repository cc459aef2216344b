import BeaconCore
import BeaconTestSupport
import BlueZ
import Foundation
import Testing

@testable import BridgeDaemon

/// `doctor`'s report, text and JSON, for the boxes a support engineer meets, against
/// Tests/Golden/daemon/doctor.txt: every verdict and every fix is a line a reviewer sees change.
/// Part of `GoldenOutputTests`, so that its filter runs it with the daemon's other outputs.
extension GoldenOutputTests {
  enum DoctorCases {
    static let base = DoctorTests()

    /// A daemon's `Status` with a fleet link, paired beacons with problems and a failing upload
    /// (Tests/Fixtures/status/doctor-status.json, the golden reply when this test was written).
    static func goldenStatus() -> StatusDocument {
      let url = Golden.directory().deletingLastPathComponent().appendingPathComponent(
        "Fixtures/status/doctor-status.json")
      do { return try StatusDocument(json: try JSONValue.parse(try Data(contentsOf: url))) } catch {
        fatalError("\(error)")
      }
    }

    static func scan(_ scan: JSONValue) -> Result<JSONValue, DoctorFacts.DaemonUnavailable> {
      .success(.object(["scanning": .null, "scan": scan, "beaconsInRange": .array([])]))
    }

    static func cases() -> [(String, DoctorFacts)] {
      var out: [(String, DoctorFacts)] = []
      out.append(("healthy", base.facts()))
      var golden = base.facts()
      golden.daemon = .success(goldenStatus())
      out.append(("a busy status", golden))
      var noAdapter = base.facts(bluez: .unavailable(.bluetoothdAbsent))
      noAdapter.kernelAdapters = []
      out.append(("no adapter in the kernel", noAdapter))
      var stopped = base.facts(bluez: .unavailable(.bluetoothdAbsent))
      stopped.kernelAdapters = ["hci0"]
      out.append(("bluetoothd stopped", stopped))
      var noBus = base.facts(bluez: .unavailable(.systemBusUnreachable))
      noBus.kernelAdapters = []
      out.append(("no system bus", noBus))
      out.append(
        (
          "adapter off",
          base.facts(
            bluez: .running(
              owner: ":1.1",
              adapters: [
                .init(
                  name: "hci0", address: nil, powered: false, discovering: false, passiveMonitoring: false)
              ]
            ))
        ))
      out.append(("BlueZ has no adapter", base.facts(bluez: .running(owner: ":1.1", adapters: []))))
      // What a daemon sends: the sentence, and the reason doctor judges by.
      for wait in [
        ScanWait(.noAdapter), ScanWait(.bluetoothdAbsent), ScanWait(.noBlueZAdapter),
        ScanWait(.adapterMissing, adapter: "hci1"), ScanWait(.adapterOff), ScanWait(.discoveryRestarting),
      ] {
        out.append(
          (
            "the daemon \(wait)",
            base.facts(
              daemon: scan(
                .object([
                  "state": .string("waiting"), "backend": .string("bluez"),
                  "detail": .string(wait.description),
                  "reason": .string(wait.reason.rawValue),
                ])))
          ))
      }
      out.append(
        (
          "the daemon failing",
          base.facts(
            daemon: scan(
              .object([
                "state": .string("failing"),
                "detail": .string("no adapter hci3: the raw HCI socket was refused"),
                "retryInSeconds": .int(8),
              ])))
        ))
      out.append(
        (
          "the daemon stopped", base.facts(daemon: .failure(.init("the beaconbridge daemon is not running")))
        ))
      out.append(
        (
          "another version",
          base.facts(daemon: .failure(.init(StatusDocumentError(path: "upload", problem: .missing))))
        ))
      return out
    }

  }

  @Test func theDoctorReports() {
    var text = ""
    for (name, facts) in DoctorCases.cases() {
      let report = Doctor.evaluate(facts)
      text += "## \(name) (exit \(report.exitStatus))\n\(report.text)\(report.json.compactText)\n\n"
    }
    let mismatch = Golden.mismatch(text, folder: "daemon", name: "doctor.txt")
    #expect(mismatch == nil, "\(mismatch ?? "")")
  }
}
