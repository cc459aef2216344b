import Testing

@testable import BridgeDaemon

/// The trip events committed at once are bounded in bytes: past 32 MiB a call is refused with a
/// sentence that says why and what to do, and the bytes come back when a call answers.
@Suite struct TripEventsBudgetTests {
  @Test func concurrentBatchesAreBoundedInTotal() {
    let budget = TripEventsBudget()
    let large = 15 * 1024 * 1024
    #expect(budget.reserve(large) == nil)
    #expect(budget.reserve(large) == nil)
    let refusal = budget.reserve(large)
    #expect(
      refusal
        == "TripEvents: 30 MiB of trip events are being committed already, and this batch's 15 MiB would pass the 32 MiB the daemon commits at once; nothing of it was taken: send it again once the calls in flight have answered"
    )
    budget.release(large)
    #expect(budget.reserve(large) == nil)
    budget.release(large)
    budget.release(large)
  }

  @Test func oneBatchAloneIsNeverRefused() {
    // The 16 MiB cap on one batch is checked elsewhere; the bound only limits how many at once.
    let budget = TripEventsBudget()
    #expect(budget.reserve(TripEventsBudget.limit + 1) == nil)
    #expect(budget.reserve(1) != nil)
    budget.release(TripEventsBudget.limit + 1)
    #expect(budget.reserve(1) == nil)
  }
}
