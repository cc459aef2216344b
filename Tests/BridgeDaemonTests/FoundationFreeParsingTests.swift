import BeaconCore
import Foundation
import Testing

@testable import BridgeDaemon
@testable import GZone

/// What the daemon's modules now do without Foundation (docs/PERFORMANCE.md), checked against
/// Foundation itself where it has the same thing.
@Suite struct FoundationFreeParsingTests {
  @Test(arguments: [
    "Sun, 06 Nov 1994 08:49:37 GMT", "Tue, 01 Dec 2026 14:30:00 GMT", "Thu, 29 Feb 2024 23:59:59 GMT",
    "Fri, 01 Jan 2100 00:00:00 GMT",
  ])
  func httpDatesAgreeWithDateFormatter(_ text: String) throws {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "GMT")
    formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
    let expected = try #require(formatter.date(from: text))
    #expect(RetryAfter.parseHTTPDate(text) == expected)
  }

  @Test(arguments: [
    "", "06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 6 Nov 1994 08:49:37 GMT",
    "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT", "soon",
  ])
  func notHTTPDates(_ text: String) {
    #expect(RetryAfter.parseHTTPDate(text) == nil)
  }

  @Test func retryAfterInTheFutureIsCappedAndInThePastIsZero() {
    #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 0)
    #expect(RetryAfter.parse("Fri, 01 Jan 2100 00:00:00 GMT") == 3600)
    #expect(RetryAfter.parse(" 12 ") == 12)
  }

  @Test(
    arguments: [
      ("{\"a\": [1, 2.5e3, -0, true, false, null, \"x\\u00e9\\n\"]}", nil),
      ("  [] ", nil), ("7", nil),
      ("", "Unexpected end of file during JSON parse."),
      ("{", "Unexpected end of file during JSON parse."),
      ("{ \"experience\": 12, \"currency\": \n", "Unexpected end of file during JSON parse."),
      ("{\"a\": x}", "Invalid value around character 6."),
      ("[1, 2, }", "Invalid value around character 7."),
      ("[01]", "Invalid value around character 1."),
      ("[1] 2", "Garbage at end around character 4."),
      ("{\"a\" 1}", "Invalid value around character 5."),
    ] as [(String, String?)])
  func jsonDiagnosis(_ text: String, _ reason: String?) {
    #expect(JSONDiagnosis.reason(Array(text.utf8)) == reason)
    // Well-formed exactly when JSONSerialization says so.
    let parsed = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    #expect((parsed != nil) == (reason == nil))
  }

  @Test func statePaths() {
    #expect(StateDirectory.path("/var/lib/beaconbridge", "x.sqlite") == "/var/lib/beaconbridge/x.sqlite")
    #expect(StateDirectory.path("/var/lib/beaconbridge/", "x.sqlite") == "/var/lib/beaconbridge/x.sqlite")
    #expect(StateDirectory.path("", "x.sqlite") == "x.sqlite")
    #expect(StateDirectory.parent(of: "/a/b/c.sqlite") == "/a/b")
    #expect(StateDirectory.parent(of: "/c.sqlite") == "/")
    #expect(StateDirectory.parent(of: "c.sqlite") == "")
  }
}
