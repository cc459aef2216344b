import Testing

/// The test tiers, as Swift Testing tags on suites. `make test-unit` runs every suite without
/// `.process` in parallel; `make test-process` runs the `.process` suites one at a time
/// (scripts/test-tiers.sh turns the tags into the suite list `swift test` filters on).
///
/// A suite carries `.process` when what it expects depends on timing that the parallel unit tests
/// would starve on a two-core machine:
/// - it runs the daemon, or the CLI against the daemon and bluetoothd's stand-in, as users run
///   them (every suite of EndToEndTests);
/// - or it measures a time: a timeout, a deadline, a stall, a child killed at once (HTTP faults,
///   the transfer child, the MQTT sink, the reader's read-ahead).
///
/// Starting a helper process is not enough: a suite that starts a private dbus-daemon,
/// python-dbusmock, the fake backend or a broker, or runs the CLI once per case (IOBoundaryTests),
/// but bounds no time closer than a hang guard (`waitUntil`'s), runs in the unit tier.
extension Tag {
  /// Runs one suite at a time, after the unit tier (`make test-process`).
  @Tag public static var process: Self
}
