/// Loading the configuration: the one reader for `run`, `doctor` and `diagnose`. Beyond
/// `parse` (a pure function of the text, which the keyfile fuzzer runs), loading checks
/// `[Upload] URL` and `[Fleet] URL` whole with libcurl's parser (`URLCheck`), which runs in a child process, and
/// that the TLS files are regular files (`checkTLSFiles`).
extension DaemonConfiguration {
  /// Reads and parses the file at `path`, or the default file when `path` is nil. A missing
  /// default file means the defaults; a missing explicit one is an error.
  public static func load(path: String?) throws(KeyFileError) -> DaemonConfiguration {
    let file = path ?? defaultPath
    guard let text = try text(path: path) else { return DaemonConfiguration() }
    return try parseChecked(text, file: file)
  }

  /// `parse`, then every URL a connection will use checked whole (`[Upload] URL`, `[Fleet] URL`, and the
  /// `[GZone]` URLs with their placeholders filled in as they are requested): an unusable one is
  /// an error at its line.
  public static func parseChecked(_ text: String, file: String) throws(KeyFileError) -> DaemonConfiguration {
    let config = try parse(text, file: file)
    var urls: [(section: String, key: String, url: String)] = []
    if let url = config.uploadURL { urls.append(("Upload", "URL", url)) }
    if let url = config.fleet.url { urls.append(("Fleet", "URL", url)) }
    for (key, payload) in GZoneConfiguration.urlKeys {
      if let url = config.gzone.url(for: payload) { urls.append(("GZone", key, url)) }
    }
    for (section, key, url) in urls {
      guard let problem = URLCheck.problem(url) else { continue }
      // The line of the setting that took effect: the last one in its section.
      let line =
        (try? KeyFile.parse(text, file: file))?.entries.last {
          $0.section == section && $0.key == key
        }?.line ?? 0
      throw KeyFileError(file: file, line: line, message: "\(key) \(problem)")
    }
    try checkTLSFiles(config, file: file)
    return config
  }
}
