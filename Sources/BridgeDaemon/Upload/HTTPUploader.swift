import BeaconCore
import FoundationEssentials

/// The HTTP sink (`UploadSink`): posts tagged batches to the backend.
///
/// One POST per batch, JSON, with the batch's idempotency key in `Idempotency-Key` (a batch whose
/// key cannot be built, a negative sequence, is not sent: a dead letter with the reason) and a bearer
/// token read from `TokenFile` by `TokenFile.read` (re-read on every request, so a rotated token
/// needs no restart; a file that breaks the token-file rule is refused and nothing is sent).
/// Each POST carries `Content-Digest` (RFC 9530, sha-256) and goes through libcurl
/// (`CurlClient`), with `timeout` as a hard deadline. A 2xx is delivery; network errors, 5xx, 408 and 429 throw `RetryablePostFailure` (with the
/// server's `Retry-After`); any other status throws `PermanentPostFailure`, which the bridge turns
/// into a dead letter. See docs/upload.md.
public struct HTTPUploader: UploadSink {
  public var url: URL
  public var tokenFile: String?
  public var timeout: Double
  public var tls: TLSFiles

  public init(url: URL, tokenFile: String?, timeout: Double = 30, tls: TLSFiles = TLSFiles()) {
    self.url = url
    self.tokenFile = tokenFile
    self.timeout = timeout
    self.tls = tls
  }

  public func post(_ batch: TaggedTripBatch) async throws {
    // Every request carries its key, or is not sent: a batch without one could be applied twice.
    let payload = try UploadPayload(batch)
    let key = payload.idempotencyKey
    let body = payload.httpBody
    var request = HTTPRequest(method: .post, url: url.absoluteString, body: body, timeout: timeout, tls: tls)
    // A fresh connection per batch: batches are seconds apart, and a reused connection that the
    // server closed is the failure most worth avoiding.
    request.headers = [
      "Content-Type: application/json", "Idempotency-Key: \(key)", ContentDigest.header(for: body),
      "Connection: close",
    ]
    if let tokenFile {
      let token: String
      do { token = try TokenFile.read(tokenFile) } catch {
        // A token file that is missing or not private is an installation problem: nothing is
        // sent, and the batch waits in the outbox until it is fixed.
        throw RetryablePostFailure("not sent: \(error.description)")
      }
      request.headers.append("Authorization: Bearer \(token)")
    }

    let response: HTTPResponse
    do { response = try await CurlClient.perform(request) } catch {
      if error.cancelled { throw CancellationError() }
      // libcurl's text may carry the URL: through the redactor.
      let reason = Redactor().redact(error.message)
      if error.timedOut { throw RetryablePostFailure("no reply within \(timeout) s: \(reason)") }
      throw RetryablePostFailure("network error: \(reason)")
    }
    switch response.status {
    case 200..<300:
      return
    case 408, 429, 500..<600:
      let retryAfter = response.header("Retry-After").flatMap(RetryAfter.parse)
      throw RetryablePostFailure("HTTP \(response.status)", retryAfter: retryAfter)
    default:
      throw PermanentPostFailure("HTTP \(response.status)")
    }
  }
}
