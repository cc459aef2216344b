import BeaconCore
import Foundation
import Testing

/// The strict JSON reader that keeps numbers and event texts as they came (issue 28).
@Suite struct JSONTextTests {
  /// Each document written back compactly is the same text: numbers, however unusual, keep
  /// their literal.
  @Test(arguments: [
    "18446744073709551615", "1e400", "-0", "1.10", "0.41", "42", "-7", "1E+2", "2.50e-3", "-0.0",
    "123456789012345678901234567890", "[1.10,-0,{\"a\":1e400}]",
  ])
  func numbersWriteBackAsTheyCame(text: String) throws {
    #expect(try JSONText.parse(Array(text.utf8)).compactText == text)
  }

  @Test func ordinaryNumbersStillCompareAsValues() throws {
    #expect(try JSONText.parse(Array("42".utf8)) == .int(42))
    #expect(try JSONText.parse(Array("0.41".utf8)) == .double(0.41))
    #expect(try JSONText.parse(Array("1.10".utf8)) == .raw("1.10"))
    #expect(try JSONText.parse(Array("1.10".utf8)).doubleValue == 1.1)
    #expect(try JSONText.parse(Array("18446744073709551615".utf8)).intValue == nil)
    #expect(try JSONText.parse(Array("1e400".utf8)).typeName == "number")
  }

  @Test func stringsDecodeEveryEscape() throws {
    let text = #""a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00é""#
    #expect(try JSONText.parse(Array(text.utf8)) == .string("a\"b\\c/d\u{08}\u{0C}\n\r\té😀é"))
  }

  @Test(arguments: [
    "", "[", "[1,]", "{\"a\"}", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "+1", "NaN", "Infinity", "tru",
    "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"", "\"a\u{01}b\"", "[1] 2", "{'a':1}", "\"unterminated",
  ])
  func malformedTextIsRefusedWithAPlace(text: String) {
    do {
      _ = try JSONText.parse(Array(text.utf8))
      Issue.record("accepted \(text.debugDescription)")
    } catch {
      #expect(error.description.hasPrefix("invalid JSON at byte "))
    }
  }

  @Test func invalidUTF8IsRefused() {
    #expect(throws: JSONText.Error.self) { try JSONText.parse([0x22, 0xFF, 0x22]) }
  }

  /// Nesting past the limit is refused, not recursed into (no stack overflow).
  @Test func deepNestingIsRefused() throws {
    let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
    #expect(throws: JSONText.Error.self) { try JSONText.parse(Array(deep.utf8)) }
    let fine = String(repeating: "[", count: 500) + String(repeating: "]", count: 500)
    #expect(try JSONText.parse(Array(fine.utf8)).arrayValue?.count == 1)
  }

  /// A batch's events keep their exact text, spaces and escapes included, and that text is what
  /// is written out.
  @Test func eventsKeepTheirTextByteForByte() throws {
    let texts = [
      #"{"type":"braking","big":18446744073709551615,"huge":1e400,"negZero":-0,"trail":1.10}"#,
      #"{ "type" : "x\u00e9\/\ud83d\ude00" ,"s":"tab\tq\"", "n":[1.0E+2, -0.0e-0] }"#,
    ]
    let events = try TripEvent.batch(fromJSON: Array(("[\n" + texts.joined(separator: " ,\n") + "]").utf8))
    #expect(events.map(\.text) == texts)
    #expect(events.map { $0.json.compactText } == texts)
    #expect(events[1].type == "xé/😀")
    #expect(JSONValue.array(events.map(\.json)).compactText == "[" + texts.joined(separator: ",") + "]")
  }

  @Test(arguments: [
    ("{}", "the events must be a JSON array of objects"), ("[1]", "event 0: an event must be a JSON object"),
    (#"[{"type":"a"},{"x":1}]"#, "event 1: an event has no \"type\""),
  ])
  func badBatchesAreRefusedWithASentence(text: String, message: String) {
    do {
      _ = try TripEvent.batch(fromJSON: Array(text.utf8))
      Issue.record("accepted \(text)")
    } catch {
      #expect(error.description.hasPrefix(message), "\(error)")
    }
  }

  @Test func theBatchCapIsSixteenMebibytes() {
    #expect(TripEventBatch.maximumJSONBytes == 16_777_216)
    #expect(TripEventBatch.refusal(jsonBytes: 16_777_216) == nil)
    #expect(TripEventBatch.refusal(jsonBytes: 16_777_217)?.contains("16777217 bytes") == true)
  }
}
