// libFuzzer entry for the scenario reader (`simulate FILE`): Scenario.decode over any bytes.
// Linked against the BeaconCore module by Fuzz/run.sh. A file that decodes must have its
// times within Scenario.maximumSeconds, sorted, and survive the virtual clock.
@testable import BeaconCore
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScenario(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let data = Data(bytes: start, count: count)
  guard let scenario = try? Scenario.decode(data) else { return 0 }
  var last = 0.0
  let clock = VirtualClock()
  for entry in scenario.entries {
    precondition(entry.at >= last && entry.at <= Scenario.maximumSeconds, "an event time out of range")
    last = entry.at
    clock.set(seconds: entry.at)
  }
  precondition(scenario.end <= Scenario.maximumSeconds)
  clock.set(seconds: scenario.end)
  return 0
}
