import Foundation

/// A fresh path under the system's temporary directory, `bb-<name>-<UUID>`, not created. The
/// caller removes what it puts there (`defer { try? FileManager.default.removeItem(atPath:) }`).
public func scratchPath(_ name: String) -> String {
  FileManager.default.temporaryDirectory.appendingPathComponent("bb-\(name)-\(UUID().uuidString)").path
}

/// `scratchPath(name)`, created as an empty directory.
public func scratchDirectory(_ name: String) throws -> String {
  let path = scratchPath(name)
  try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  return path
}

/// Writes a token file as an installation should (mode 0600: the token-file rule refuses a file
/// that others can read); returns the path.
@discardableResult
public func writeTokenFile(_ text: String, to path: String) throws -> String {
  try text.write(toFile: path, atomically: true, encoding: .utf8)
  try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
  return path
}
