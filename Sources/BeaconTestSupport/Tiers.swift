import Testing

/// The test tiers, as Swift Testing tags on suites. `make test-unit` runs every suite without
/// `.process` in parallel; `make test-process` runs the `.process` suites one at a time
/// (scripts/test-tiers.sh turns the tags into the suite list `swift test` filters on).
extension Tag {
  /// The suite starts daemons, mocks, brokers or HTTP servers as processes and times them, so it
  /// runs alone: on a two-core machine the parallel unit tests would starve its timing.
  @Tag public static var process: Self
}
