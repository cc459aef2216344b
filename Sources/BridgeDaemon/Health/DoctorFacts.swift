import BeaconCore
import BlueZ

/// What `doctor` found, gathered by the caller (so the judgement is tested without a machine).
public struct DoctorFacts: Sendable {
  public var configPath: String
  public var configuration: Result<DaemonConfiguration, KeyFileError>
  public var stateDirectory: String
  /// nil when writable; otherwise why not.
  public var stateDirectoryProblem: String?
  /// What fixes `stateDirectoryProblem` (`StateDirectoryError.fix`).
  public var stateDirectoryFix: String?
  /// The directory and its store exist and were read, but this user cannot write there (a
  /// read-only mount, a copy): why, and the fix. A warning: the store reads, the daemon could not
  /// keep it there.
  public var stateDirectoryNotWritable: (problem: String, fix: String)?
  public var store: Result<(check: String, outbox: OutboxSummary), StoreError>?
  public var freeBytes: UInt64?
  /// The controllers the kernel has (`KernelAdapters`), when looked at.
  public var kernelAdapters: [String]?
  /// nil when the backend is HCI (bluetoothd is not needed).
  public var bluez: BlueZProbe.Result?
  /// The daemon's `Status`, or why it could not be had (or read).
  public var daemon: Result<StatusDocument, DaemonUnavailable>
  /// The `Status` reply as the daemon sent it, when there was one (the support bundle keeps it
  /// whole, unknown keys too, even when it did not read as a `StatusDocument`).
  public var daemonReply: JSONValue?
  /// The token files the configuration names (`[Upload]`, `[GZone]`), each with what
  /// `TokenFile.check` found: nil when it would be used, else why it is refused.
  public var tokenFiles: [TokenFileCheck]
  public var isRoot: Bool
  /// Whether the configuration file exists (a missing default file means the defaults).
  public var configExists = true
  /// The rotation exponents of the store's EID pairings and the fleet's applied settings, when
  /// the store was read: with the file's tolerance, the worst cold search the daemon would run.
  public var eidSearch: (rotationExponents: [UInt8], fleetSettings: [FleetSetting])?
  /// Secrets to keep out of the report beyond those in the configuration's URLs (the gatherer
  /// adds the token files' contents).
  public var redactor = Redactor()

  public struct TokenFileCheck: Sendable {
    /// `[Upload] TokenFile`, `[GZone] TokenFile` or `[MQTT] PasswordFile`.
    public var key: String
    public var path: String
    public var problem: TokenFileError?
    public init(key: String, path: String, problem: TokenFileError?) {
      self.key = key
      self.path = path
      self.problem = problem
    }
  }

  public struct DaemonUnavailable: Error, Sendable {
    public var reason: String
    public var fix: String
    public init(_ reason: String, fix: String = "systemctl start beaconbridge") {
      self.reason = reason
      self.fix = fix
    }

    /// A reply that did not read as a `StatusDocument`: the daemon runs another version.
    public init(_ error: StatusDocumentError) { self.init(error.description, fix: StatusDocumentError.fix) }
  }

  public init(
    configPath: String, configuration: Result<DaemonConfiguration, KeyFileError>, stateDirectory: String,
    stateDirectoryProblem: String?, store: Result<(check: String, outbox: OutboxSummary), StoreError>?,
    freeBytes: UInt64?, bluez: BlueZProbe.Result?, daemon: Result<StatusDocument, DaemonUnavailable>,
    tokenFiles: [TokenFileCheck],
    isRoot: Bool
  ) {
    self.configPath = configPath
    self.configuration = configuration
    self.stateDirectory = stateDirectory
    self.stateDirectoryProblem = stateDirectoryProblem
    self.store = store
    self.freeBytes = freeBytes
    self.bluez = bluez
    self.daemon = daemon
    self.tokenFiles = tokenFiles
    self.isRoot = isRoot
  }
}
