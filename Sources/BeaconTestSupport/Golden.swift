import Foundation

/// A checked-in output (Tests/Golden/<folder>/<name>) that a test's output must equal byte for
/// byte, so that a change to what a box reports is a change a reviewer sees in a file.
/// `BEACONBRIDGE_UPDATE_GOLDEN=1 swift test --filter Golden` rewrites the files instead.
public enum Golden {
  /// Tests/Golden, found from the calling test file's own path (Tests/<Target>/<file>.swift).
  public static func directory(testFile: String = #filePath) -> URL {
    URL(fileURLWithPath: testFile).deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Golden")
  }

  /// The golden file's bytes, or nil when it does not exist.
  public static func read(_ folder: String, _ name: String, testFile: String = #filePath) -> Data? {
    try? Data(
      contentsOf: directory(testFile: testFile).appendingPathComponent(folder).appendingPathComponent(name))
  }

  /// Nil when `output` is the golden file's content (or was written, when updating); otherwise
  /// a sentence naming the file and the first line that differs.
  public static func mismatch(
    _ output: String, folder: String, name: String, testFile: String = #filePath
  ) -> String? {
    let url = directory(testFile: testFile).appendingPathComponent(folder).appendingPathComponent(name)
    if ProcessInfo.processInfo.environment["BEACONBRIDGE_UPDATE_GOLDEN"] == "1" {
      do {
        try FileManager.default.createDirectory(
          at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(output.utf8).write(to: url)
        return nil
      } catch { return "cannot write \(url.path): \(error)" }
    }
    guard let data = try? Data(contentsOf: url) else {
      return "no golden file \(url.path): run with BEACONBRIDGE_UPDATE_GOLDEN=1 and commit it"
    }
    let want = String(decoding: data, as: UTF8.self)
    guard want != output else { return nil }
    let wanted = want.split(separator: "\n", omittingEmptySubsequences: false)
    let got = output.split(separator: "\n", omittingEmptySubsequences: false)
    let line =
      zip(wanted, got).enumerated().first { $0.element.0 != $0.element.1 }?.offset
      ?? min(wanted.count, got.count)
    let before = line < wanted.count ? String(wanted[line]) : "<end>"
    let after = line < got.count ? String(got[line]) : "<end>"
    return "\(folder)/\(name) differs at line \(line + 1):\n  golden: \(before)\n  output: \(after)"
  }
}
