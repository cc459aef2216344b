import BeaconCore
import FoundationEssentials

/// Posts tagged batches to the backend: the daemon's `ScopeHost.postTripEventBatch`.
///
/// One POST per batch, JSON, with the batch's idempotency key in `Idempotency-Key` (a batch whose
/// key cannot be built from a valid trip ID is not sent: a dead letter with the reason) and a bearer
/// token read from `TokenFile` by `TokenFile.read` (re-read on every request, so a rotated token
/// needs no restart; a file that breaks the token-file rule is refused and nothing is sent).
/// Each POST carries `Content-Digest` (RFC 9530, sha-256) and goes through libcurl
/// (`CurlClient`), with `timeout` as a hard deadline. A 2xx is delivery; network errors, 5xx, 408 and 429 throw `RetryablePostFailure` (with the
/// server's `Retry-After`); any other status throws `PermanentPostFailure`, which the bridge turns
/// into a dead letter. See docs/upload.md.
public struct HTTPUploader: Sendable {
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
    // Every request carries its key, or is not sent: a batch without one could be applied twice.
    let key: String
    do { key = try batch.validatedIdempotencyKey() } catch {
      throw PermanentPostFailure("not sent: no Idempotency-Key can be made from it: \(error.description)")
    }
    let body = Array(Self.body(for: batch).compactText.utf8)
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
      let retryAfter = response.header("Retry-After").flatMap(Self.parseRetryAfter)
      throw RetryablePostFailure("HTTP \(response.status)", retryAfter: retryAfter)
    default:
      throw PermanentPostFailure("HTTP \(response.status)")
    }
  }

  /// `Retry-After` in seconds (the HTTP-date form is read too), capped at an hour.
  static func parseRetryAfter(_ text: String) -> Double? {
    if let seconds = Double(text.trimmedWhitespace), seconds >= 0 { return min(seconds, 3600) }
    guard let date = parseHTTPDate(text.trimmedWhitespace) else { return nil }
    return min(max(0, date.timeIntervalSinceNow), 3600)
  }

  /// An HTTP-date (RFC 9110 IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`), read by hand: a
  /// `DateFormatter` would bring Foundation and ICU into the daemon (docs/PERFORMANCE.md).
  static func parseHTTPDate(_ text: String) -> Date? {
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    let parts = text.split(separator: " ")
    guard parts.count == 6, parts[0].hasSuffix(","), days.contains(String(parts[0].dropLast())),
      let day = Int(parts[1]), (1...31).contains(day), parts[1].count == 2,
      let month = months.firstIndex(of: String(parts[2])),
      let year = Int(parts[3]), parts[3].count == 4, parts[5] == "GMT"
    else { return nil }
    let clock = parts[4].split(separator: ":", omittingEmptySubsequences: false)
    guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }), let hour = Int(clock[0]),
      let minute = Int(clock[1]), let second = Int(clock[2]), hour < 24, minute < 60, second < 61
    else { return nil }
    // Days from 1970-01-01 to the civil date (Howard Hinnant's days_from_civil).
    let y = month < 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yearOfEra = y - era * 400
    let m = month + 1
    let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + day - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    let daysSinceEpoch = era * 146097 + dayOfEra - 719468
    let seconds = daysSinceEpoch * 86400 + hour * 3600 + minute * 60 + second
    return Date(timeIntervalSince1970: Double(seconds))
  }
}
