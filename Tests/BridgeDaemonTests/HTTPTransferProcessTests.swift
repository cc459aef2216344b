import BeaconTestSupport
import Foundation
import Testing

@testable import BridgeDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// Requests through `beaconbridged --http-transfer` (`CurlTransferProcess`), the way the daemon
/// runs them, against the fake backend: the same replies and the same libcurl errors as in
/// process (HTTPFaultTests), and a cancelled request kills its child at once.
@Suite(.tags(.process)) struct HTTPTransferProcessTests {
  static var daemon: String {
    var root = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { root.deleteLastPathComponent() }
    return root.appendingPathComponent(".build/debug/beaconbridged").path
  }

  func post(_ backend: FakeBackend, timeout: Double, executable: String = daemon) async -> Result<
    HTTPResponse, HTTPTransferError
  > {
    let body = Array(#"{"tripId":"t","sequence":0,"events":[]}"#.utf8)
    let request = HTTPRequest(
      method: .post, url: backend.url.absoluteString,
      headers: ["Content-Type: application/json", ContentDigest.header(for: body)],
      body: body, timeout: timeout)
    return await CurlTransferProcess.perform(request, executable: executable)
  }

  @Test func aReplyComesBackWhole() async throws {
    let backend = try await FakeBackend(["--script", "503:9,200"])
    guard case .success(let refused) = await post(backend, timeout: 10) else {
      Issue.record("no reply")
      return
    }
    #expect(refused.status == 503)
    #expect(refused.header("Retry-After") == "9")
    guard case .success(let accepted) = await post(backend, timeout: 10) else {
      Issue.record("no reply")
      return
    }
    #expect(accepted.status == 200)
    #expect(backend.received().map(\.status) == ["503", "200"])
  }

  @Test func aHungServerTimesOutAsInProcess() async throws {
    let backend = try await FakeBackend(["--script", "hang", "--hang", "60"])
    let start = ContinuousClock.now
    guard case .failure(let error) = await post(backend, timeout: 2) else {
      Issue.record("a reply from a hung server")
      return
    }
    #expect(error.timedOut, "\(error)")
    #expect(ContinuousClock.now - start < .seconds(30))
  }

  @Test func aReplyCutShortIsLibcurlsError() async throws {
    let backend = try await FakeBackend(["--script", "partial"])
    guard case .failure(let error) = await post(backend, timeout: 60) else {
      Issue.record("a cut reply taken whole")
      return
    }
    // libcurl's own words, which its versions change ("90 bytes remaining to read" in
    // bookworm's, "end of response with 90 bytes missing" in trixie's).
    #expect(error.message.contains("90 bytes"), "\(error)")
  }

  @Test func cancellingKillsTheChild() async throws {
    let backend = try await FakeBackend(["--script", "hang", "--hang", "60"])
    let start = ContinuousClock.now
    let task = Task { await post(backend, timeout: 60) }
    // Cancelled once the server holds the request: the child is running its transfer.
    try await waitUntil("the server got the request") { backend.received().map(\.status) == ["hang"] }
    task.cancel()
    guard case .failure(let error) = await task.value else {
      Issue.record("a reply from a hung server")
      return
    }
    #expect(error.cancelled, "\(error)")
    #expect(ContinuousClock.now - start < .seconds(30))
  }

  /// systemd stops the unit with SIGTERM to each of its processes: a transfer's child ends on it,
  /// though it is spawned from a pool thread (whose mask blocks SIGTERM) of a daemon that holds
  /// SIGTERM for its SignalStream.
  @Test func theChildEndsOnSIGTERM() async throws {
    let backend = try await FakeBackend(["--script", "hang", "--hang", "60"])
    let body = Array(#"{"tripId":"t","sequence":0,"events":[]}"#.utf8)
    let request = HTTPRequest(
      method: .post, url: backend.url.absoluteString, headers: [ContentDigest.header(for: body)], body: body,
      timeout: 60)
    let child = CurlTransferProcess.Child(executable: Self.daemon, request: TransferCoding.encode(request))
    let result = Task {
      await withCheckedContinuation { continuation in
        child.continuation = continuation
        child.start()
      }
    }
    try await waitUntil("the child spawned", timeout: .seconds(20)) {
      child.pid.load(ordering: .sequentiallyConsistent) != 0
    }
    let pid = child.pid.load(ordering: .sequentiallyConsistent)
    try #require(pid > 0, "no child spawned")
    let start = ContinuousClock.now
    kill(pid, SIGTERM)
    guard case .failure = await result.value else {
      Issue.record("a reply from a hung server")
      return
    }
    #expect(ContinuousClock.now - start < .seconds(10), "the child outlived SIGTERM")
  }

  @Test func aMissingExecutableIsAnError() async throws {
    let backend = try await FakeBackend([])
    guard case .failure(let error) = await post(backend, timeout: 5, executable: "/nonexistent/beaconbridged")
    else {
      Issue.record("a reply without a child")
      return
    }
    #expect(error.message.contains("cannot run /nonexistent/beaconbridged --http-transfer"), "\(error)")
    #expect(backend.received().isEmpty)
  }

  /// A child that ends without a reply is said with how it ended; exit status 127 (a spawn that
  /// could not report its failed exec, as under qemu-user) as a program that cannot run.
  @Test(arguments: [
    ("exit 127", "cannot run PROGRAM --http-transfer: it exited with status 127 before replying"),
    ("exit 3", "the HTTP transfer process ended without a reply: it exited with status 3"),
    ("kill -9 $$", "the HTTP transfer process ended without a reply: it was killed by signal 9"),
  ])
  func aChildWithoutAReplyIsSaidByHowItEnded(script: String, expected: String) async throws {
    let dir = try scratchDirectory("transfer-child")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let program = dir + "/child"
    try "#!/bin/sh\ncat >/dev/null\n\(script)\n".write(toFile: program, atomically: true, encoding: .utf8)
    chmod(program, 0o755)
    let backend = try await FakeBackend([])
    guard case .failure(let error) = await post(backend, timeout: 5, executable: program) else {
      Issue.record("a reply from a child that sends none")
      return
    }
    #expect(error.message == expected.replacingOccurrences(of: "PROGRAM", with: program))
    #expect(backend.received().isEmpty)
  }

  /// Run by hand (stdin a terminal's EOF, or anything that is not a request), the child says
  /// what it is on one line and sends nothing.
  @Test(arguments: ["", "POST http://example/ HTTP/1.1\n"])
  func theChildRefusesInputThatIsNotARequest(input: String) async throws {
    let run = try await runProcess(Self.daemon, ["--http-transfer"], stdin: input)
    #expect(run.status == 64)
    #expect(run.stdout.isEmpty)
    #expect(
      run.stderr.hasPrefix("beaconbridged --http-transfer: stdin held no transfer request"), "\(run.stderr)")
    #expect(run.stderr.split(separator: "\n").count == 1)
  }

  @Test func theCodingRoundTrips() throws {
    let request = HTTPRequest(
      method: .get, url: "https://h/x", headers: ["A: b", "C: d"], body: [0, 1, 255], timeout: 2.5,
      tls: TLSFiles(caFile: "/ca", certFile: nil, keyFile: "/k"))
    let decoded = try #require(TransferCoding.decodeRequest(TransferCoding.encode(request)))
    #expect(decoded.method == .get && decoded.url == request.url && decoded.headers == request.headers)
    #expect(decoded.body == request.body && decoded.timeout == 2.5 && decoded.tls == request.tls)
    #expect(TransferCoding.decodeRequest(Array(TransferCoding.encode(request).dropLast())) == nil)
  }
}
