import BeaconCore
import FoundationEssentials

/// Reading the configuration file's text, for `load(path:)` (Upload/CheckedConfiguration.swift)
/// and `diagnose`.
extension DaemonConfiguration {
  /// The file's text, unparsed, or nil when `path` is nil and the default file does not exist.
  /// `diagnose` bundles the text (redacted) even when it does not parse.
  public static func text(path: String?) throws(KeyFileError) -> String? {
    let file = path ?? defaultPath
    guard FileManager.default.fileExists(atPath: file) else {
      if path != nil { throw KeyFileError(file: file, line: 0, message: "no such file") }
      return nil
    }
    let bytes: [UInt8]
    do { bytes = try InputReader.read(file, limit: maximumFileSize) } catch {
      throw KeyFileError(file: file, line: 0, message: "cannot read it: \(error.reason)")
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      throw KeyFileError(file: file, line: 0, message: "cannot read it: it is not UTF-8 text")
    }
    return text
  }
}
