/// Loading the configuration: the one reader for `run`, `doctor` and `diagnose`. Beyond
/// `parse` (a pure function of the text, which the keyfile fuzzer runs), loading checks
/// `[Upload] URL` whole with libcurl's parser (`URLCheck`), which runs in a child process.
extension DaemonConfiguration {
  /// Reads and parses the file at `path`, or the default file when `path` is nil. A missing
  /// default file means the defaults; a missing explicit one is an error.
  public static func load(path: String?) throws(KeyFileError) -> DaemonConfiguration {
    let file = path ?? defaultPath
    guard let text = try text(path: path) else { return DaemonConfiguration() }
    return try parseChecked(text, file: file)
  }

  /// `parse`, then the upload URL checked whole: an unusable one is an error at its line.
  public static func parseChecked(_ text: String, file: String) throws(KeyFileError) -> DaemonConfiguration {
    let config = try parse(text, file: file)
    guard let url = config.uploadURL, let problem = URLCheck.problem(url) else { return config }
    // The line of the `URL` that took effect: the last one in [Upload].
    let line =
      (try? KeyFile.parse(text, file: file))?.entries.last {
        $0.section == "Upload" && $0.key == "URL"
      }?.line ?? 0
    throw KeyFileError(file: file, line: line, message: "URL \(problem)")
  }
}
