/// One event a trip recorder reports, with all of its fields.
///
/// The seed app's types are recognised (`TripEventKind`); any other type is kept as it is, never
/// dropped.
public struct TripEvent: Hashable, Sendable {
  /// The whole object, as received (for reading: numbers may be `.raw`).
  public let fields: [String: JSONValue]
  /// The object's JSON text exactly as it was received, which is what is written out (`json`):
  /// every number and string byte for byte. nil for an event built in code, which is
  /// written from `fields`.
  public let text: String?

  public init(fields: [String: JSONValue]) {
    self.fields = fields
    text = nil
  }

  /// Builds an event from a decoded JSON value; it must be an object with a string `type`.
  /// `text`, when given, is the value's JSON text as received, kept to be written out unchanged.
  public init(json: JSONValue, text: String? = nil) throws(TripEventError) {
    guard let object = json.objectValue else {
      throw TripEventError("an event must be a JSON object, not \(json.typeName)")
    }
    guard let type = object["type"] else { throw TripEventError("an event has no \"type\"") }
    guard type.stringValue != nil else { throw TripEventError("an event's \"type\" must be a string") }
    self.fields = object
    self.text = text
  }

  /// The events of a batch from its JSON text, an array of event objects, each keeping its text.
  /// The caller checks the size first (`TripEventBatch.refusal(jsonBytes:)`). An event is the
  /// recorder's, passed on byte for byte: a key it repeats is passed on as it came, but for
  /// `type`, which the box reads, and which must therefore say one thing.
  public static func batch(fromJSON bytes: [UInt8]) throws(TripEventError) -> [TripEvent] {
    let elements: [(value: JSONValue, text: String)]
    do { elements = try JSONText.elements(ofArray: bytes, interpreted: ["type"]) } catch {
      if error.duplicateKey != nil { throw TripEventError("the events are refused: \(error.description)") }
      throw TripEventError("the events must be a JSON array of objects: \(error.description)")
    }
    var events: [TripEvent] = []
    events.reserveCapacity(elements.count)
    for (i, element) in elements.enumerated() {
      do { events.append(try TripEvent(json: element.value, text: element.text)) } catch {
        throw TripEventError("event \(i): \(error.description)")
      }
    }
    return events
  }

  public var type: String { fields["type"]?.stringValue ?? "" }

  public var kind: TripEventKind { TripEventKind(rawValue: type) ?? .other }

  /// What is written out: the text as received, or the fields.
  public var json: JSONValue { text.map(JSONValue.raw) ?? .object(fields) }
}

/// The SmartDriveDemo app's TripEventType set: braking, acceleration, cornering, speeding,
/// distraction start/end. The wire names follow the seed's camelCase style.
public enum TripEventKind: String, Hashable, Sendable, CaseIterable {
  case braking
  case acceleration
  case cornering
  case speeding
  case distractionStart
  case distractionEnd
  /// Any other type: kept and forwarded unchanged.
  case other
}

public struct TripEventError: Error, Hashable, Sendable, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}
