import BeaconCore
import BlueZ
import BridgeDaemon
import DBus
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `beaconbridge diagnose --export FILE.tar.gz`: what support receives.
public struct DiagnoseCommand: BridgeCommand {
  public static let name = "diagnose"
  public static let abstract = "Export a support bundle (.tar.gz): health, status, versions, logs, decisions."
  public static let usage =
    "beaconbridge diagnose [--export FILE.tar.gz] [--capture SECONDS] [--lines N] [--config PATH] [--state-dir DIR]"
  public static let discussion = """
    Writes one .tar.gz that standard tar lists, with a MANIFEST.txt naming every file and why it
    is there, and every piece that could not be had and why. Works with the daemon stopped: it
    gathers what it can and writes the bundle whatever is missing. It only reads the state
    directory, and reads a read-only one: a state directory or store that is not there (or does
    not read) is a finding, listed under FINDINGS in MANIFEST.txt and in doctor's checks, and
    the bundle is written all the same (exit 0; exit 1 only when it cannot be written). Secrets (tokens, passwords, URL
    credentials, the token file's contents) never reach the bundle; token files are never
    included.

    OPTIONS:
      --export FILE     Where to write (default: beaconbridge-diagnostics-<time>.tar.gz here).
      --capture S       Also capture S seconds of HCI traffic with btmon (needs root and btmon).
      --lines N         Log lines to include (default 500).
      --config PATH     The configuration file (default /etc/beaconbridge/beaconbridge.conf).
    \(StoreOptions.help)
    """

  var export: String?
  var capture: Double?
  var lines: Int
  var configPath: String?
  var store: StoreOptions

  public init(_ arguments: inout Arguments) throws(UsageError) {
    export = try arguments.option("--export")
    capture = try arguments.number("--capture", in: 1...600)
    lines = Int(try arguments.number("--lines", in: 1...100_000) ?? 500)
    configPath = try arguments.option("--config")
    store = try StoreOptions(&arguments)
    if let export, !(export.hasSuffix(".tar.gz") || export.hasSuffix(".tgz")) {
      throw UsageError("--export must name a .tar.gz file, not \(export.quotedForMessage)")
    }
  }

  /// One file of the bundle, or a piece that could not be had.
  struct Entry {
    var name: String
    var why: String
    var content: Data?
    var missing: String?
  }

  public func run(_ console: any Console) async -> Int32 {
    let stamp = Self.timestamp()
    let output = export ?? "beaconbridge-diagnostics-\(stamp).tar.gz"
    let stateDirectory = store.directory
    // Diagnose only reads, and creates nothing in the state directory. A directory or store that
    // is not there is what support most needs to know: a finding in the bundle (MANIFEST.txt
    // and doctor's checks), never a reason to write none.
    var missingStore: StateDirectoryError?
    do throws(StateDirectoryError) {
      try StateDirectory.requireExisting(stateDirectory, store: true)
    } catch {
      missingStore = error
    }
    let configFile = configPath ?? DaemonConfiguration.defaultPath
    var entries: [Entry] = []

    // Configuration first: it teaches the redactor the secrets (URL credentials and secret
    // parameters, the token files' contents).
    let loaded: Result<DaemonConfiguration, KeyFileError>
    do { loaded = .success(try DaemonConfiguration.load(path: configPath)) } catch {
      loaded = .failure(error)
    }
    let configuration = try? loaded.get()
    var redactor = configuration.map { Redactor(configuration: $0) } ?? Redactor()
    // Said as doctor and run would: defaults apply only when there is no file at all.
    let refused: String? =
      if case .failure(let error) = loaded { "refused by run and doctor: \(error.description)" } else { nil }
    let text: Result<String?, KeyFileError>
    do { text = .success(try DaemonConfiguration.text(path: configPath)) } catch { text = .failure(error) }
    switch text {
    case .success(let text?):
      entries.append(
        Entry(
          name: "beaconbridge.conf",
          why: "the configuration, secrets redacted (token files are never included)"
            + (refused.map { "; \($0)" } ?? ""),
          content: Data(redactor.redactConfiguration(text).utf8)))
    case .success(nil):
      entries.append(
        Entry(
          name: "beaconbridge.conf", why: "the configuration",
          missing: "\(configFile) does not exist (the daemon runs on the defaults)"))
    case .failure(let error):
      entries.append(
        Entry(
          name: "beaconbridge.conf", why: "the configuration",
          missing: "\(error.description) (run and doctor refuse it: the daemon does not start)"))
    }
    let facts = await DoctorCommand.gather(configPath: configPath, stateDirectory: stateDirectory)
    let report = Doctor.evaluate(facts)
    entries.append(
      Entry(
        name: "doctor.json", why: "the health checks, as JSON", content: Data(report.json.compactText.utf8)))
    entries.append(
      Entry(
        name: "doctor.txt", why: "the health checks, as doctor prints them", content: Data(report.text.utf8)))

    switch (facts.daemonReply, facts.daemon) {
    case (let reply?, _):
      entries.append(
        Entry(
          name: "status.json", why: "the daemon's state (status --json)",
          content: Data(reply.compactText.utf8)))
    case (nil, .failure(let why)):
      entries.append(Entry(name: "status.json", why: "the daemon's state", missing: why.reason))
    case (nil, .success(let status)):
      entries.append(
        Entry(
          name: "status.json", why: "the daemon's state (status --json)",
          content: Data(status.json.compactText.utf8)))
    }

    entries.append(Self.versions())
    entries.append(await Self.adapters())

    var storeProblem = missingStore?.description
    if missingStore == nil {
      do {
        let opened = try Store(readingOnly: stateDirectory)
        if let pairings = try? await opened.pairings() {
          entries.append(
            Entry(
              name: "pairings.json", why: "the pairings",
              content: Data(JSONValue.array(pairings.map(\.json)).compactText.utf8)))
        } else {
          entries.append(
            Entry(name: "pairings.json", why: "the pairings", missing: "the store's pairings do not read"))
        }
        if let summary = try? await opened.outboxSummary() {
          let dead = (try? await opened.deadLetters()) ?? []
          let json = summary.json(deadLetters: dead.map { ($0.key, $0.reason) })
          entries.append(
            Entry(
              name: "outbox.json", why: "outbox and dead-letter counts, oldest item's age",
              content: Data(json.compactText.utf8)))
        } else {
          entries.append(
            Entry(name: "outbox.json", why: "the outbox", missing: "the store's outbox does not read"))
        }
        if let decisions = try? await opened.recentDecisions() {
          entries.append(
            Entry(
              name: "decisions.json",
              why: "the last trips' tagging decisions: trip, device ID, beacon snapshot, why",
              content: Data(JSONValue.array(decisions).compactText.utf8)))
        } else {
          entries.append(
            Entry(name: "decisions.json", why: "the decisions", missing: "the store's decisions do not read"))
        }
      } catch {
        storeProblem = error.description
      }
    }
    if let storeProblem {
      for name in ["pairings.json", "outbox.json", "decisions.json"] {
        entries.append(Entry(name: name, why: "from the store", missing: storeProblem))
      }
    }

    entries.append(await Self.logs(lines: lines))
    if let capture { entries.append(Self.btmon(seconds: capture)) }

    // Everything written goes through the one redaction function, logs included.
    for i in entries.indices {
      if let data = entries[i].content, entries[i].name.hasSuffix(".btsnoop") == false {
        entries[i].content = Data(redactor.redact(String(decoding: data, as: UTF8.self)).utf8)
      }
      entries[i].missing = entries[i].missing.map(redactor.redact)
    }
    let findings = storeProblem.map { [redactor.redact($0)] } ?? []
    do {
      try Self.write(entries, findings: findings, stamp: stamp, to: output)
    } catch {
      console.err("beaconbridge: \(redactor.redact(error.description))\n")
      return ExitStatus.failure
    }
    let missing = entries.filter { $0.missing != nil }.count
    console.out(
      "Wrote \(output) (\(entries.count - missing) files; \(missing) piece(s) missing, named in MANIFEST.txt).\n"
    )
    // The bundle is what was asked for; what it found is in it, and said here too.
    for finding in findings { console.err("beaconbridge: diagnose: found: \(finding)\n") }
    return ExitStatus.success
  }

  static func timestamp() -> String {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyyMMdd-HHmmss"
    return formatter.string(from: Date())
  }

  /// Runs a command with a deadline; nil when it cannot run.
  static func capture(_ path: String, _ arguments: [String], timeout: Double = 5) -> String? {
    guard FileManager.default.isExecutableFile(atPath: path) else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let out = Pipe()
    process.standardOutput = out
    process.standardError = out
    do { try process.run() } catch { return nil }
    let pid = process.processIdentifier
    let killer = DispatchWorkItem { kill(pid, SIGKILL) }
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
    // The throwing read: readDataToEndOfFile() traps on a read error.
    let data = (try? out.fileHandleForReading.readToEnd()) ?? Data()
    process.waitUntilExit()
    killer.cancel()
    return String(decoding: data, as: UTF8.self)
  }

  static func versions() -> Entry {
    var lines = ["beaconbridge \(CLI.version)"]
    lines.append(
      "bluetoothd "
        + (capture("/usr/sbin/bluetoothd", ["--version"])?.trimmedWhitespace.filter { $0 != "\n" }
          ?? "not installed"))
    var name = utsname()
    uname(&name)
    let release = withUnsafeBytes(of: &name.release) {
      String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
    }
    lines.append("kernel \(release)")
    let packages = capture(
      "/usr/bin/dpkg-query", ["-W", "-f", "${Package} ${Version}\n", "libdbus-1-3", "bluez", "libsqlite3-0"])
    lines.append(contentsOf: (packages ?? "").split(separator: "\n").map(String.init))
    lines.append("sqlite (linked) \(Store.sqliteVersion)")
    return Entry(
      name: "versions.txt", why: "versions: beaconbridge, BlueZ, kernel, libdbus, SQLite",
      content: Data((lines.joined(separator: "\n") + "\n").utf8))
  }

  static func adapters() async -> Entry {
    guard let connection = try? Connection(.system) else {
      return Entry(
        name: "adapters.json", why: "adapter facts",
        missing: BlueZProbe.Unavailable.systemBusUnreachable.description)
    }
    defer { connection.close() }
    switch await BlueZProbe.probe(connection) {
    case .unavailable(let why):
      return Entry(name: "adapters.json", why: "adapter facts", missing: why.description)
    case .running(_, let adapters):
      let json = JSONValue.array(
        adapters.map { a in
          .object([
            "name": .string(a.name), "address": a.address.map { .string($0) } ?? .null,
            "powered": .bool(a.powered),
            "discovering": .bool(a.discovering), "passiveMonitoring": .bool(a.passiveMonitoring),
          ])
        })
      var text = json.compactText
      // The controller's version, when btmgmt can tell.
      if let info = capture("/usr/bin/btmgmt", ["info"], timeout: 3), info.contains("version") {
        text += "\n" + JSONValue.object(["btmgmtInfo": .string(info)]).compactText
      }
      return Entry(
        name: "adapters.json", why: "adapter facts: address, powered, discovering, controller (btmgmt info)",
        content: Data(text.utf8))
    }
  }

  static func logs(lines: Int) async -> Entry {
    if let journal = capture(
      "/usr/bin/journalctl", ["-u", "beaconbridge", "-n", String(lines), "--no-pager", "-o", "short-iso"]),
      !journal.contains("No journal files"), !journal.trimmedWhitespace.isEmpty,
      !journal.hasPrefix("-- No entries --")
    {
      return Entry(
        name: "logs.txt", why: "the last \(lines) lines of the service's journal", content: Data(journal.utf8)
      )
    }
    if let reply = try? await DaemonClient.call(BridgeServiceNames.Method.recentLogs),
      let text = reply.first?.string,
      let array = (try? JSONValue.parse(Data(text.utf8)))?.arrayValue
    {
      let recent = array.compactMap(\.stringValue).suffix(lines).joined(separator: "\n")
      return Entry(
        name: "logs.txt", why: "the daemon's last log lines, from its in-memory ring (no journal here)",
        content: Data((recent + "\n").utf8))
    }
    return Entry(
      name: "logs.txt", why: "the service's log",
      missing: "no journal for beaconbridge, and the daemon is not running")
  }

  static func btmon(seconds: Double) -> Entry {
    guard geteuid() == 0 else {
      return Entry(name: "btmon.btsnoop", why: "an HCI capture", missing: "capturing needs root")
    }
    // In a private folder of its own: a predictable name in a shared /tmp could be a link or a
    // FIFO put there by another user, and this runs as root.
    var template = Array("\(FileManager.default.temporaryDirectory.path)/bb-btmon-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else {
      return Entry(
        name: "btmon.btsnoop", why: "an HCI capture",
        missing: "no folder for the capture (\(SystemError.words(errno)))")
    }
    let folder = String(cString: made)
    let path = folder + "/capture.btsnoop"
    defer {
      unlink(path)
      rmdir(folder)
    }
    // btmon writes about 100 KB a second on a busy radio; 64 MiB bounds what the bundle takes.
    guard capture("/usr/bin/btmon", ["-w", path], timeout: seconds) != nil,
      let bytes = try? InputReader.read(path, limit: 64 << 20), !bytes.isEmpty
    else {
      return Entry(
        name: "btmon.btsnoop", why: "an HCI capture", missing: "btmon is not installed or captured nothing")
    }
    return Entry(
      name: "btmon.btsnoop", why: "\(Int(seconds)) s of HCI traffic (btmon -w)", content: Data(bytes))
  }

  /// Writes the files and the manifest into a private folder, packs it with `tar -czf -`, and
  /// writes the archive with `ExportFile` (a temporary file renamed into place).
  static func write(_ entries: [Entry], findings: [String] = [], stamp: String, to output: String)
    throws(ExportError)
  {
    try ExportFile.write(try bundle(entries, findings: findings, stamp: stamp, output: output), to: output)
  }

  /// `findings`: what the bundle found wrong with the state directory or the store, listed first
  /// in MANIFEST.txt.
  static func bundle(_ entries: [Entry], findings: [String] = [], stamp: String, output: String)
    throws(ExportError) -> Data
  {
    let temporary = FileManager.default.temporaryDirectory.path
    var template = Array("\(temporary)/bb-diag-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else {
      throw ExportError(
        path: output, problem: "cannot make a staging folder in \(temporary) (\(SystemError.words(errno)))",
        fix: "free space there, or set TMPDIR to a writable directory")
    }
    let staging = String(cString: made)
    defer { try? FileManager.default.removeItem(atPath: staging) }
    let folder = "beaconbridge-diagnostics-\(stamp)"
    let root = staging + "/" + folder
    guard mkdir(root, 0o700) == 0 else {
      throw ExportError(
        path: output, problem: "cannot make a staging folder in \(staging) (\(SystemError.words(errno)))",
        fix: "free space there, or set TMPDIR to a writable directory")
    }
    var manifest = "beaconbridge diagnostics bundle, \(stamp) UTC\n\nFINDINGS\n"
    manifest +=
      findings.isEmpty
      ? "  (none about the state directory or the store)\n" : findings.map { "  \($0)\n" }.joined()
    manifest += "\nFILES\n"
    for entry in entries {
      guard let content = entry.content else { continue }
      try ExportFile.write(content, to: root + "/" + entry.name)
      manifest += "  \(entry.name.padding(toLength: 18)) \(entry.why)\n"
    }
    let missing = entries.filter { $0.missing != nil }
    manifest += "\nMISSING\n"
    manifest +=
      missing.isEmpty
      ? "  (nothing)\n"
      : missing.map { "  \($0.name.padding(toLength: 18)) \($0.why): \($0.missing ?? "")\n" }.joined()
    manifest +=
      "\nSecrets (tokens, passwords, URL credentials) are redacted; token files are never included.\n"
    try ExportFile.write(Data(manifest.utf8), to: root + "/MANIFEST.txt")
    let tar = Process()
    tar.executableURL = URL(fileURLWithPath: "/bin/tar")
    tar.arguments = ["-czf", "-", "-C", staging, folder]
    let out = Pipe()
    let err = Pipe()
    tar.standardOutput = out
    tar.standardError = err
    do { try tar.run() } catch {
      throw ExportError(
        path: output, problem: "/bin/tar cannot be run", fix: "install tar (apt-get install tar)")
    }
    // stdout first: tar blocks once the pipe is full.
    let archive = (try? out.fileHandleForReading.readToEnd()) ?? Data()
    let message = String(decoding: (try? err.fileHandleForReading.readToEnd()) ?? Data(), as: UTF8.self)
    tar.waitUntilExit()
    guard tar.terminationStatus == 0, !archive.isEmpty else {
      throw ExportError(
        path: output, problem: "tar failed: \(message.split(separator: "\n").joined(separator: "; "))",
        fix: "check the free space in \(temporary)")
    }
    return archive
  }
}
