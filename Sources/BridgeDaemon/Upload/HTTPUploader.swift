import BeaconCore
import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// Posts tagged batches to the backend: the daemon's `ScopeHost.postTripEventBatch`.
///
/// One POST per batch, JSON, with the batch's idempotency key in `Idempotency-Key` (a batch whose
/// key cannot be built from a valid trip ID is not sent: a dead letter with the reason) and a bearer
/// token read from `TokenFile` by `TokenFile.read` (re-read on every request, so a rotated token
/// needs no restart; a file that breaks the token-file rule is refused and nothing is sent).
/// A 2xx is delivery; network errors, 5xx, 408 and 429 throw `RetryablePostFailure` (with the
/// server's `Retry-After`); any other status throws `PermanentPostFailure`, which the bridge turns
/// into a dead letter. See docs/upload.md.
public struct HTTPUploader: Sendable {
  public var url: URL
  public var tokenFile: String?
  public var timeout: Double

  public init(url: URL, tokenFile: String?, timeout: Double = 30) {
    self.url = url
    self.tokenFile = tokenFile
    self.timeout = timeout
  }

  /// The request body (docs/upload.md).
  public static func body(for batch: TaggedTripBatch) -> JSONValue {
    var beacon: JSONValue = .null
    if let s = batch.beacon {
      var fields: [String: JSONValue] = ["proximity": .string(s.proximity.rawValue)]
      for (key, value) in s.id.jsonFields { fields[key] = value }
      if let label = s.label { fields["label"] = .string(label) }
      if let rssi = s.lastRSSI { fields["rssi"] = .int(Int64(rssi)) }
      if let smoothed = s.smoothedRSSI { fields["smoothedRssi"] = .double((smoothed * 10).rounded() / 10) }
      if let distance = s.distance { fields["distance"] = .double((distance * 100).rounded() / 100) }
      beacon = .object(fields)
    }
    return .object([
      "tripId": .string(batch.tripId),
      "deviceId": .string(batch.deviceId),
      "sequence": .int(Int64(batch.sequence)),
      "resolution": .string(batch.resolution.reason),
      "beacon": beacon,
      "events": .array(batch.events.map(\.json)),
    ])
  }

  public func post(_ batch: TaggedTripBatch) async throws {
    var request = URLRequest(url: url, timeoutInterval: timeout)
    request.httpMethod = "POST"
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    // Every request carries its key, or is not sent: a batch without one could be applied twice.
    let key: String
    do { key = try batch.validatedIdempotencyKey() } catch {
      throw PermanentPostFailure("not sent: no Idempotency-Key can be made from it: \(error.description)")
    }
    request.setValue(key, forHTTPHeaderField: "Idempotency-Key")
    guard request.value(forHTTPHeaderField: "Idempotency-Key") == key else {
      throw PermanentPostFailure(
        "not sent: the Idempotency-Key header \(key.quotedForMessage) could not be set")
    }
    // A fresh connection per batch: batches are seconds apart, and a reused connection that the
    // server closed is the failure most worth avoiding.
    request.setValue("close", forHTTPHeaderField: "Connection")
    if let tokenFile {
      let token: String
      do { token = try TokenFile.read(tokenFile) } catch {
        // A token file that is missing or not private is an installation problem: nothing is
        // sent, and the batch waits in the outbox until it is fixed.
        throw RetryablePostFailure("not sent: \(error.description)")
      }
      request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
    }
    request.httpBody = Data(Self.body(for: batch).compactText.utf8)

    let response = try await Self.send(request, timeout: timeout)
    guard let http = response as? HTTPURLResponse else { throw RetryablePostFailure("not an HTTP response") }
    switch http.statusCode {
    case 200..<300:
      return
    case 408, 429, 500..<600:
      let retryAfter = http.value(forHTTPHeaderField: "Retry-After").flatMap(Self.parseRetryAfter)
      throw RetryablePostFailure("HTTP \(http.statusCode)", retryAfter: retryAfter)
    default:
      throw PermanentPostFailure("HTTP \(http.statusCode)")
    }
  }

  /// Sends with a hard deadline. swift-corelibs-foundation's async `data(for:)` was seen here to
  /// hang past `timeoutInterval` when a server closed a connection without replying, so the
  /// request runs as a data task that a timer cancels.
  static func send(_ request: URLRequest, timeout: Double) async throws -> URLResponse {
    final class Once: @unchecked Sendable {
      private let lock = NSLock()
      private var continuation: CheckedContinuation<URLResponse, any Error>?
      init(_ c: CheckedContinuation<URLResponse, any Error>) { continuation = c }
      /// Returns whether this call was the one that resumed.
      @discardableResult
      func finish(_ result: Result<URLResponse, any Error>) -> Bool {
        lock.lock()
        let c = continuation
        continuation = nil
        lock.unlock()
        c?.resume(with: result)
        return c != nil
      }
    }
    return try await withCheckedThrowingContinuation { continuation in
      let once = Once(continuation)
      let task = URLSession.shared.dataTask(with: request) { _, response, error in
        if let response {
          once.finish(.success(response))
        } else {
          // Foundation's text may carry the URL: through the redactor.
          let reason = Redactor().redact(error?.localizedDescription ?? "no response")
          once.finish(.failure(RetryablePostFailure("network error: \(reason)")))
        }
      }
      task.resume()
      DispatchQueue.global().asyncAfter(deadline: .now() + timeout) {
        // Cancel only a task that is still running: swift-corelibs-foundation traps
        // ("a task that is not in the registry") when a finished task is cancelled.
        if once.finish(.failure(RetryablePostFailure("no reply within \(timeout) s"))), task.state == .running
        {
          task.cancel()
        }
      }
    }
  }

  /// `Retry-After` in seconds (the HTTP-date form is read too), capped at an hour.
  static func parseRetryAfter(_ text: String) -> Double? {
    if let seconds = Double(text.trimmedWhitespace), seconds >= 0 { return min(seconds, 3600) }
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
    guard let date = formatter.date(from: text) else { return nil }
    return min(max(0, date.timeIntervalSinceNow), 3600)
  }
}
