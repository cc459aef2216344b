import BeaconCore
import BeaconTestSupport
import BridgeDaemon
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The uploader against a real HTTP server on loopback that injects failures.
@Suite(.serialized) struct HTTPUploaderTests {
  static let snapshot = BeaconSnapshot(
    id: .iBeacon(Fixtures.vanBeacon), deviceId: "UNIT-0042", label: "van 7", smoothedRSSI: -61.26,
    lastRSSI: -60,
    distance: 1.234, proximity: .near, takenAt: Timestamp(seconds: 3))

  func batch(_ sequence: Int, trip: TripID = "t1") -> TaggedTripBatch {
    TaggedTripBatch(
      batch: TripEventBatch(
        tripId: trip, sequence: sequence,
        events: [
          Fixtures.event("braking", at: 1, extra: ["g": .double(0.4)]), Fixtures.event("futureType", at: 2),
        ],
        receivedAt: .zero),
      deviceId: "UNIT-0042", resolution: .beacon(Self.snapshot, late: false))
  }

  @Test func postsTheDocumentedRequest() async throws {
    let token = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID().uuidString)")
      .path
    try writeTokenFile("s3cret\n", to: token)
    defer { try? FileManager.default.removeItem(atPath: token) }
    let backend = try await FakeBackend(["--token", "s3cret"])
    try await HTTPUploader(url: backend.url, tokenFile: token).post(batch(4))
    let received = try #require(backend.received().first)
    #expect(received.status == "200")
    #expect(received.key == "t1#4")
    #expect(received.auth == "Bearer s3cret")
    #expect(received.body["tripId"]?.stringValue == "t1")
    #expect(received.body["deviceId"]?.stringValue == "UNIT-0042")
    #expect(received.body["sequence"]?.intValue == 4)
    #expect(received.body["resolution"]?.stringValue == "activeAtStart")
    #expect(received.body["beacon"]?["minor"]?.intValue == 7)
    #expect(received.body["beacon"]?["uuid"]?.stringValue == Fixtures.fleet.uuidString)
    let events = try #require(received.body["events"]?.arrayValue)
    #expect(events.count == 2)
    #expect(events[0]["g"] == .double(0.4))
    #expect(events[1]["type"]?.stringValue == "futureType")
  }

  /// A token file others can read, an empty one or a directory: nothing is sent, and the error
  /// names the file, what is wrong and the fix (retryable: the batch waits until it is fixed).
  @Test(arguments: [
    ("s3cret\n", 0o644 as mode_t, "can be read by every user (mode 0644)"),
    ("", 0o600 as mode_t, "is empty"),
    ("s3cret\n", 0o606 as mode_t, "can be written by every user (mode 0606)"),
  ])
  func tokenFileRuleRefusesTheUpload(text: String, mode: mode_t, phrase: String) async throws {
    let token = try writeTokenFile(text, to: scratchPath("token"))
    defer { try? FileManager.default.removeItem(atPath: token) }
    #expect(chmod(token, mode) == 0)
    let backend = try await FakeBackend(["--token", "s3cret"])
    do {
      try await HTTPUploader(url: backend.url, tokenFile: token).post(batch(1))
      Issue.record("posted with a refused token file")
    } catch let failure as RetryablePostFailure {
      #expect(failure.reason.contains(token) && failure.reason.contains(phrase), "\(failure.reason)")
      #expect(failure.reason.contains("not sent"))
      if mode & 0o007 != 0 { #expect(failure.reason.contains("chmod 0640 \(token)")) }
    }
    #expect(backend.received().isEmpty)
  }

  @Test func tokenDirectoryRefusesTheUpload() async throws {
    let token = try scratchDirectory("token-dir")
    defer { try? FileManager.default.removeItem(atPath: token) }
    let backend = try await FakeBackend([])
    await #expect(throws: RetryablePostFailure.self) {
      try await HTTPUploader(url: backend.url, tokenFile: token).post(batch(1))
    }
    #expect(backend.received().isEmpty)
  }

  @Test(arguments: [
    ("503", true), ("500", true), ("408", true), ("429", true), ("400", false), ("401", false),
    ("422", false),
  ])
  func classifiesStatuses(status: String, retryable: Bool) async throws {
    let backend = try await FakeBackend(["--script", status])
    do {
      try await HTTPUploader(url: backend.url, tokenFile: nil).post(batch(0))
      Issue.record("HTTP \(status) counted as delivered")
    } catch is RetryablePostFailure {
      #expect(retryable)
    } catch is PermanentPostFailure {
      #expect(!retryable)
    }
  }

  @Test func honoursRetryAfter() async throws {
    let backend = try await FakeBackend(["--script", "429:7"])
    do {
      try await HTTPUploader(url: backend.url, tokenFile: nil).post(batch(0))
    } catch let failure as RetryablePostFailure {
      #expect(failure.retryAfter == 7)
    }
  }

  @Test func droppedConnectionAndDeadServerAreRetryable() async throws {
    let backend = try await FakeBackend(["--script", "drop"])
    await #expect(throws: RetryablePostFailure.self) {
      try await HTTPUploader(url: backend.url, tokenFile: nil, timeout: 5).post(batch(0))
    }
    // Nothing listens on port 9 of loopback (discard is not served here).
    await #expect(throws: RetryablePostFailure.self) {
      try await HTTPUploader(url: URL(string: "http://127.0.0.1:9/trips")!, tokenFile: nil, timeout: 5).post(
        batch(0))
    }
  }

  /// Every upload carries its Idempotency-Key, or is not sent. A trip ID that breaks the rule (a
  /// CR/LF, a space, an empty one) makes no `TripID`, so no batch carries one; a batch whose
  /// sequence is negative has no key either, and is refused as permanent, so the bridge makes it a
  /// dead letter with the reason, and the backend never sees it. (A trip ID stored by another
  /// version: LegacyOutboxRowTests.)
  @Test(arguments: ["t\r\n1", "t\nIdempotency-Key: forged", "", "trip 1", "t\u{0}"])
  func aBatchWithoutAKeyIsNotSent(trip: String) async throws {
    #expect(throws: IdentifierError.self) { try TripID(trip) }
    let backend = try await FakeBackend()
    let uploader = HTTPUploader(url: backend.url, tokenFile: nil, timeout: 5)
    do {
      try await uploader.post(batch(-1))
      Issue.record("a batch with sequence -1 was sent")
    } catch let failure as PermanentPostFailure {
      #expect(
        failure.reason.hasPrefix("not sent: no Idempotency-Key can be made from it: batch sequence "),
        "\(failure)")
    }
    // The server records in arrival order: a good batch after the refused one is the only request.
    try await uploader.post(batch(3, trip: "t-ok"))
    #expect(backend.received().map(\.key) == ["t-ok#3"])
  }

  /// Through the bridge: a flaky backend gets every batch, in order, exactly once after
  /// de-duplication by key.
  @Test func flakyBackendReceivesEverythingInOrder() async throws {
    struct Host: ScopeHost {
      let uploader: HTTPUploader
      var configuration: BridgeConfiguration {
        var c = BridgeConfiguration()
        c.trips.configuredDeviceId = "SERIAL-5"
        c.postRetryInitial = 0.01
        c.postRetryMax = 0.05
        return c
      }
      func log(_ record: LogRecord) {}
      func postTripEventBatch(_ batch: TaggedTripBatch) async throws { try await uploader.post(batch) }
    }
    let backend = try await FakeBackend(["--fail-rate", "0.3", "--drop-rate", "0.1", "--seed", "3"])
    let bridge = BeaconBridge(
      host: Host(uploader: HTTPUploader(url: backend.url, tokenFile: nil, timeout: 5)))
    try await bridge.start()
    try await bridge.tripStart("t9")
    for i in 0..<20 { try await bridge.tripEvents("t9", events: [Fixtures.event("braking", at: Double(i))]) }
    try await waitUntil("every batch delivered") {
      await bridge.tick()
      return await bridge.status.outboundBatches == 0
    }
    let delivered = backend.received().filter { $0.status == "200" }
    #expect(delivered.compactMap { $0.body["sequence"]?.intValue } == (0..<20).map(Int64.init))
    #expect(Set(delivered.compactMap(\.key)).count == 20)
    #expect(backend.received().count > 20, "the backend injected no failures")
  }
}
