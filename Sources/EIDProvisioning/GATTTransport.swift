/// What the provisioner needs of a GATT connection to one beacon: read and write a
/// characteristic of the Eddystone Configuration Service by UUID, each within a time. The
/// connection itself (connect, find the service, disconnect) is the transport owner's: the CLI's
/// BlueZ transport, or a test's scripted one.
public protocol GATTTransport: Sendable {
  func read(_ characteristic: ConfigService.Characteristic, timeout: Duration) async throws(GATTError)
    -> [UInt8]
  func write(_ characteristic: ConfigService.Characteristic, _ value: [UInt8], timeout: Duration)
    async throws(GATTError)
}

/// A GATT operation that failed, as the provisioner tells them apart. The ATT errors are those
/// the Configuration Service returns (its "GATT Error Codes").
public enum GATTError: Error, Equatable, Sendable, CustomStringConvertible {
  /// ATT 0x02: the beacon is locked, or the characteristic is not readable now.
  case readNotPermitted
  /// ATT 0x03: locked, read-only, or (on Unlock or Lock State) the wrong lock key.
  case writeNotPermitted
  /// ATT 0x0D: a value of a length or a range the beacon refuses.
  case invalidAttributeLength
  /// Another ATT error, by its code.
  case attribute(UInt8)
  /// No answer within the step's time.
  case timeout
  /// The connection dropped.
  case disconnected
  /// The service has no such characteristic.
  case noCharacteristic
  /// Anything else the stack reported, in its words.
  case other(String)

  public var description: String {
    switch self {
    case .readNotPermitted: "Read Not Permitted (ATT 0x02)"
    case .writeNotPermitted: "Write Not Permitted (ATT 0x03)"
    case .invalidAttributeLength: "Invalid Attribute Length (ATT 0x0D)"
    case .attribute(let code):
      "ATT error 0x\(String(code, radix: 16, uppercase: true).count == 1 ? "0" : "")\(String(code, radix: 16, uppercase: true))"
    case .timeout: "no answer in time"
    case .disconnected: "the beacon disconnected"
    case .noCharacteristic: "the service has no such characteristic"
    case .other(let text): text
    }
  }
}
