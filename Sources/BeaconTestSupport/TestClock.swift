import BeaconCore

/// The tests' clock: a `VirtualClock`, moved with `advance(by:)`; `waitForSleepers(count:)` waits
/// until the expected tasks sleep on it.
public typealias TestClock = VirtualClock
