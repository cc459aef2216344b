import BeaconCore
import BeaconTestSupport
import Foundation
import Testing

@testable import BridgeDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// HTTP faults through libcurl (`CurlClient`), against a real server on loopback
/// (Tests/Support/fake_backend.py): each ends in an error the bridge retries, within the
/// deadline, and none is taken for a delivery.
@Suite(.tags(.process), .serialized) struct HTTPFaultTests {
  func batch(_ sequence: Int) -> TaggedTripBatch {
    TaggedTripBatch(
      batch: TripEventBatch(
        tripId: "fault", sequence: sequence, events: [Fixtures.event("braking", at: 1)], receivedAt: .zero),
      deviceId: "UNIT-7", resolution: .configured(deviceId: "UNIT-7"))
  }

  /// Posts, and returns the retryable failure and how long it took.
  func failure(_ uploader: HTTPUploader, _ sequence: Int = 0) async -> (RetryablePostFailure?, Duration) {
    let start = ContinuousClock.now
    do {
      try await uploader.post(batch(sequence))
      return (nil, ContinuousClock.now - start)
    } catch let failure as RetryablePostFailure {
      return (failure, ContinuousClock.now - start)
    } catch {
      Issue.record("not a retryable failure: \(error)")
      return (nil, ContinuousClock.now - start)
    }
  }

  @Test func aServerThatAcceptsAndNeverAnswersTimesOut() async throws {
    let backend = try await FakeBackend(["--script", "hang", "--hang", "60"])
    let (failure, took) = await failure(HTTPUploader(url: backend.url, tokenFile: nil, timeout: 2))
    let reason = try #require(failure?.reason)
    #expect(reason.hasPrefix("no reply within 2.0 s"), "\(reason)")
    // Well under the server's 60 s hang, yet loose enough for a loaded two-core machine.
    #expect(took >= .milliseconds(1900) && took < .seconds(30), "gave up after \(took)")
    #expect(backend.received().map(\.status) == ["hang"])
  }

  @Test func aServerThatClosesMidReplyFailsAtOnce() async throws {
    let backend = try await FakeBackend(["--script", "partial"])
    let (failure, took) = await failure(HTTPUploader(url: backend.url, tokenFile: nil, timeout: 60))
    let reason = try #require(failure?.reason)
    // libcurl's own words, which its versions change (bookworm's "90 bytes remaining to read",
    // trixie's "end of response with 90 bytes missing").
    #expect(reason.hasPrefix("network error: ") && reason.contains("90 bytes"), "\(reason)")
    #expect(took < .seconds(30), "gave up after \(took), not at once")
  }

  @Test func aSlowBodyEndsAtTheDeadline() async throws {
    let backend = try await FakeBackend(["--script", "slow"])
    let (failure, took) = await failure(HTTPUploader(url: backend.url, tokenFile: nil, timeout: 3))
    let reason = try #require(failure?.reason)
    #expect(reason.hasPrefix("no reply within 3.0 s"), "\(reason)")
    #expect(took >= .milliseconds(2900) && took < .seconds(30), "gave up after \(took)")
  }

  @Test func aServerThatClosesWithoutAReplyFailsAtOnce() async throws {
    let backend = try await FakeBackend(["--script", "drop"])
    let (failure, took) = await failure(HTTPUploader(url: backend.url, tokenFile: nil, timeout: 60))
    #expect(try #require(failure?.reason).hasPrefix("network error: "))
    #expect(took < .seconds(30), "gave up after \(took), not at once")
  }

  @Test(arguments: [("503:9", 9.0), ("503:0", 0.0), ("503", nil as Double?)])
  func a503CarriesItsRetryAfter(step: String, retryAfter: Double?) async throws {
    let backend = try await FakeBackend(["--script", step])
    let (failure, _) = await failure(HTTPUploader(url: backend.url, tokenFile: nil, timeout: 5))
    #expect(try #require(failure).reason == "HTTP 503")
    #expect(failure?.retryAfter == retryAfter)
  }

  /// Cancelling the uploading task aborts the transfer at once, hung server or not.
  @Test func cancellingAbortsTheTransfer() async throws {
    let backend = try await FakeBackend(["--script", "hang", "--hang", "60"])
    let uploader = HTTPUploader(url: backend.url, tokenFile: nil, timeout: 60)
    let start = ContinuousClock.now
    let task = Task { try await uploader.post(batch(0)) }
    // Cancelled once the server holds the request, so that it is the transfer that is aborted.
    try await waitUntil("the server got the request") { backend.received().map(\.status) == ["hang"] }
    task.cancel()
    await #expect(throws: CancellationError.self) { try await task.value }
    #expect(ContinuousClock.now - start < .seconds(30))
  }

  // MARK: Content-Digest

  @Test func sha256MatchesTheStandardVectors() {
    func hex(_ text: String) -> String {
      SHA256.hash(Array(text.utf8)).map { String($0, radix: 16).leftPadded(2) }.joined()
    }
    #expect(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    #expect(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    #expect(
      hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
        == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    #expect(
      hex(String(repeating: "a", count: 1000))
        == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    #expect(
      ContentDigest.value(for: Array("abc".utf8)) == "sha-256=:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=:")
  }

  @Test func everyBatchCarriesAContentDigestTheServerChecks() async throws {
    let backend = try await FakeBackend()
    try await HTTPUploader(url: backend.url, tokenFile: nil, timeout: 30).post(batch(3))
    let received = try #require(backend.received().first)
    #expect(received.status == "200")
    #expect(received.digest?.hasPrefix("sha-256=:") == true)
  }

  /// The fake backend is as strict as a real server: a wrong or missing digest is a 400, not a
  /// delivery.
  @Test(arguments: [["Content-Digest: sha-256=:AAAA:"], []])
  func aBodyWithABadDigestIsRefused(digestHeader: [String]) async throws {
    let backend = try await FakeBackend()
    let request = HTTPRequest(
      method: .post, url: backend.url.absoluteString,
      headers: ["Content-Type: application/json", "Idempotency-Key: x#0"] + digestHeader,
      body: Array("{}".utf8), timeout: 5)
    let response = try await CurlClient.perform(request)
    #expect(response.status == 400)
    #expect(backend.received().map(\.status) == [digestHeader.isEmpty ? "digest-missing" : "digest-mismatch"])
  }

  /// A body that ends short of its Content-Length (a client killed mid-send) is no request: the
  /// server never answers it and never records it as delivered.
  @Test func aBodyShortOfItsContentLengthIsNotADelivery() async throws {
    let backend = try await FakeBackend()
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #expect(fd >= 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(backend.port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    #expect(connected == 0)
    let body = #"{"tripId":"cut","sequence":0}"#
    let head =
      "POST /trips HTTP/1.1\r\nHost: x\r\nIdempotency-Key: cut#0\r\n"
      + "Content-Digest: \(ContentDigest.value(for: Array(body.utf8)))\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
    let sent = Array((head + body.prefix(10)).utf8)
    #expect(write(fd, sent, sent.count) == sent.count)
    shutdown(fd, Int32(SHUT_WR))
    var reply = [UInt8](repeating: 0, count: 512)
    let read = Glibc.read(fd, &reply, reply.count)
    #expect(read == 0, "the server answered a cut-short body")
    #expect(backend.received().map(\.status) == ["truncated"])
  }

  // MARK: TLS

  /// The test CA and certificates (BeaconTestSupport's, shared with the fleet's TLS tests).
  typealias TestPKI = BeaconTestSupport.TestPKI

  @Test func serverTLSWithTheTestCA() async throws {
    let pki = try TestPKI()
    defer { try? FileManager.default.removeItem(atPath: pki.dir) }
    let backend = try await FakeBackend(["--tls-cert", pki.serverCert, "--tls-key", pki.serverKey])
    #expect(backend.url.scheme == "https")
    try await HTTPUploader(url: backend.url, tokenFile: nil, timeout: 30, tls: TLSFiles(caFile: pki.ca)).post(
      batch(1))
    #expect(backend.received().map(\.status) == ["200"])
    // Without the CA, the system's CAs do not trust it: a retryable failure, nothing delivered.
    let (failure, took) = await failure(HTTPUploader(url: backend.url, tokenFile: nil, timeout: 60), 2)
    #expect(try #require(failure).reason.contains("certificate"), "\(failure?.reason ?? "")")
    #expect(took < .seconds(30), "not refused at once: \(took)")
    #expect(backend.received().map(\.status) == ["200"])
  }

  @Test func mutualTLSNeedsTheClientCertificate() async throws {
    let pki = try TestPKI()
    defer { try? FileManager.default.removeItem(atPath: pki.dir) }
    let backend = try await FakeBackend([
      "--tls-cert", pki.serverCert, "--tls-key", pki.serverKey, "--tls-client-ca", pki.ca,
    ])
    let mutual = TLSFiles(caFile: pki.ca, certFile: pki.clientCert, keyFile: pki.clientKey)
    try await HTTPUploader(url: backend.url, tokenFile: nil, timeout: 30, tls: mutual).post(batch(1))
    #expect(backend.received().map(\.status) == ["200"])
    let (failure, took) = await failure(
      HTTPUploader(url: backend.url, tokenFile: nil, timeout: 60, tls: TLSFiles(caFile: pki.ca)), 2)
    #expect(try #require(failure).reason.hasPrefix("network error: "), "\(failure?.reason ?? "")")
    #expect(took < .seconds(30), "not refused at once: \(took)")
    #expect(backend.received().map(\.status) == ["200"])
  }

  @Test func aKeyWithoutItsCertificateIsAConfigurationError() throws {
    #expect(throws: KeyFileError.self) {
      try DaemonConfiguration.parse("[Upload]\nKeyFile = /etc/beaconbridge/client.key\n", file: "c.conf")
    }
    let config = try DaemonConfiguration.parse(
      "[Upload]\nCAFile = /ca.pem\nCertFile = /c.pem\nKeyFile = /c.key\n", file: "c.conf")
    #expect(config.uploadTLS == TLSFiles(caFile: "/ca.pem", certFile: "/c.pem", keyFile: "/c.key"))
    #expect(throws: KeyFileError.self) {
      try DaemonConfiguration.parse("[Upload]\nCAFile = ca.pem\n", file: "c.conf")
    }
  }
}

extension String {
  fileprivate func leftPadded(_ width: Int) -> String {
    String(repeating: "0", count: max(0, width - count)) + self
  }
}
