import BeaconCore
import FoundationEssentials

/// The server's `Retry-After` (RFC 9110 §10.2.3), for `HTTPUploader`: how long a 408, 429 or 5xx
/// asks the bridge to wait before the next attempt.
enum RetryAfter {
  /// `Retry-After` in seconds (the HTTP-date form is read too), capped at an hour.
  static func parse(_ text: String) -> Double? {
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
