import HCIParsing

/// What the scan session needs from an HCI socket: write a command packet, and read the event
/// packets that have arrived (each without its H4 indicator). The real one is `HCISocket`;
/// tests script a controller.
public protocol HCITransport: AnyObject {
  /// The adapter's name for messages, e.g. "hci0".
  var adapterName: String { get }
  func send(_ packet: [UInt8]) throws(HCIScanError)
  /// Waits up to `timeoutMilliseconds` for events, then returns every event already queued
  /// (empty after a timeout).
  func receive(timeoutMilliseconds: Int32) throws(HCIScanError) -> [[UInt8]]
}
