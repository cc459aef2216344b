import BeaconCore
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#endif

/// Reading the configuration file's text, for `load(path:)` (Upload/CheckedConfiguration.swift)
/// and `diagnose`, and the TLS files' check that loading makes.
extension DaemonConfiguration {
  /// libcurl and libmosquitto open the TLS files with blocking reads: a FIFO or a device in their
  /// place would stall every upload, so one is refused when the configuration loads. A missing
  /// file is left to the upload's own error, which names it.
  static func checkTLSFiles(_ config: DaemonConfiguration, file: String) throws(KeyFileError) {
    let files = [
      ("CAFile", config.uploadTLS.caFile), ("CertFile", config.uploadTLS.certFile),
      ("KeyFile", config.uploadTLS.keyFile),
    ]
    for case let (key, path?) in files {
      do throws(InputError) {
        let (fd, _) = try RegularFile.open(path)
        close(fd)
      } catch  where error.kind != nil {
        throw KeyFileError(
          file: file, line: 0,
          message: "[Upload] \(key) \(path) \(error.reason.dropFirst(3)); point \(key) at a PEM file")
      } catch {}
    }
  }

  /// The file's text, unparsed, or nil when `path` is nil and the default file does not exist.
  /// `diagnose` bundles the text (redacted) even when it does not parse.
  public static func text(path: String?) throws(KeyFileError) -> String? {
    let file = path ?? defaultPath
    let bytes: [UInt8]
    // RegularFile.open: a FIFO or a device put in its place (then SIGHUP) is refused, not waited on.
    do { bytes = try InputReader.read(file, limit: maximumFileSize) } catch {
      if error.code == ENOENT {
        if path != nil { throw KeyFileError(file: file, line: 0, message: "no such file") }
        return nil
      }
      throw KeyFileError(file: file, line: 0, message: "cannot read it: \(error.reason)")
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      // The first line that is not UTF-8, so the fix can be found in a long file.
      let lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
      let bad = lines.firstIndex { String(validating: $0, as: UTF8.self) == nil }.map { $0 + 1 } ?? 0
      throw KeyFileError(
        file: file, line: bad, message: "this line is not UTF-8 text; save the file as UTF-8")
    }
    return text
  }
}
