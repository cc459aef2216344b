import BeaconCore
import BlueZ
import BridgeDaemon
import DBus
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `beaconbridge doctor`: health checks, grouped, with what to do about each.
public struct DoctorCommand: BridgeCommand {
  public static let name = "doctor"
  public static let abstract =
    "Check the box's health: permissions, Bluetooth, configuration, storage, upload."
  public static let usage = "beaconbridge doctor [--config PATH] [--state-dir DIR] [--json]"
  public static let discussion = """
    Each check is ok, warning or critical, with a recommendation; the overall status is the
    worst of them. Works with the daemon stopped (it then says so). It creates nothing: a
    missing state directory or store is critical ("not found"). It reads the store only, so it
    works on a read-only state directory too (a warning: the daemon could not write there).

    Exit status: 0 when everything is ok, 2 on a warning, 1 on anything critical.

    OPTIONS:
      --config PATH    The configuration file (default /etc/beaconbridge/beaconbridge.conf).
    \(StoreOptions.help)
      --json           {"overall": ..., "checks": [{category, name, status, detail, recommendation}]}
    """

  var configPath: String?
  var store: StoreOptions
  var json: Bool

  public init(_ arguments: inout Arguments) throws(UsageError) {
    json = arguments.flag("--json")
    configPath = try arguments.option("--config")
    store = try StoreOptions(&arguments)
  }

  public func run(_ console: any Console) async -> Int32 {
    let facts = await Self.gather(configPath: configPath, stateDirectory: store.directory)
    // Doctor.evaluate redacts every check (URL credentials, secret parameters, tokens).
    let report = Doctor.evaluate(facts)
    // Text mode escapes control and bidi characters (a path in a detail); JSON escapes its own.
    console.out(json ? report.json.compactText + "\n" : report.text.escapingControlCharactersExceptNewlines)
    return report.exitStatus
  }

  static func gather(configPath: String?, stateDirectory: String) async -> DoctorFacts {
    let configuration: Result<DaemonConfiguration, KeyFileError>
    do { configuration = .success(try DaemonConfiguration.load(path: configPath)) } catch {
      configuration = .failure(error)
    }

    // Doctor only reads: a missing directory or store is "not found" (critical), never created.
    // A directory this user cannot write (a read-only mount, a copy) is read all the same, and
    // said (a warning): the daemon could not keep its store there.
    var problem: StateDirectoryError?
    var notWritable: StateDirectoryError?
    do { try StateDirectory.requireExisting(stateDirectory, store: true) } catch { problem = error }
    if problem == nil {
      // prepare() creates nothing here (the directory exists); it checks that it can be written.
      do { try StateDirectory.prepare(stateDirectory) } catch { notWritable = error }
    }

    var store: Result<(check: String, outbox: OutboxSummary), StoreError>?
    var eidSearch: (rotationExponents: [UInt8], fleetSettings: [FleetSetting])?
    if problem == nil {
      do {
        let opened = try Store(readingOnly: stateDirectory)
        if case .success(let c) = configuration { await opened.setOutboxLimit(c.outboxMaxBatches) }
        store = .success((try await opened.check(), try await opened.outboxSummary()))
        if let keyed = try? await opened.keyPairings() {
          let fleet = (try? await opened.fleetApplied())??.settings ?? []
          eidSearch = (keyed.compactMap(\.rotationExponent), fleet)
        }
      } catch {
        store = .failure(error)
      }
    }

    var free: UInt64?
    var info = statvfs()
    if statvfs(stateDirectory, &info) == 0 { free = UInt64(info.f_bavail) * UInt64(info.f_frsize) }

    var bluez: BlueZProbe.Result?
    let backend = (try? configuration.get())?.backend ?? .bluez
    if backend == .bluez {
      if let connection = try? Connection(.system) {
        bluez = await BlueZProbe.probe(connection)
        connection.close()
      } else {
        bluez = .unavailable(.systemBusUnreachable)
      }
    }

    let status: Result<StatusDocument, DoctorFacts.DaemonUnavailable>
    var reply: JSONValue?
    do {
      let answer = try await DaemonClient.status()
      reply = answer.reply
      status = answer.document.mapError(DoctorFacts.DaemonUnavailable.init)
    } catch {
      status = .failure(DoctorFacts.DaemonUnavailable(error.description))
    }

    var tokenFiles: [DoctorFacts.TokenFileCheck] = []
    var redactor = Redactor()
    if let config = try? configuration.get() {
      if let file = config.tokenFile {
        tokenFiles.append(.init(key: "[Upload] TokenFile", path: file, problem: TokenFile.check(file)))
      }
      if config.gzone.isEnabled, let file = config.gzone.tokenFile, file != config.tokenFile {
        tokenFiles.append(.init(key: "[GZone] TokenFile", path: file, problem: TokenFile.check(file)))
      }
      if let mqtt = config.mqttSettings, let file = mqtt.passwordFile {
        tokenFiles.append(.init(key: "[MQTT] PasswordFile", path: file, problem: TokenFile.check(file)))
      }
      redactor = Redactor(configuration: config)
    }

    var facts = DoctorFacts(
      configPath: configPath ?? DaemonConfiguration.defaultPath, configuration: configuration,
      stateDirectory: stateDirectory, stateDirectoryProblem: problem.map { String($0.problem) }, store: store,
      freeBytes: free, bluez: bluez, daemon: status, tokenFiles: tokenFiles, isRoot: geteuid() == 0)
    facts.stateDirectoryFix = problem?.fix
    facts.stateDirectoryNotWritable = notWritable.map { (String($0.problem), $0.fix) }
    facts.daemonReply = reply
    facts.kernelAdapters = KernelAdapters.names()
    facts.redactor = redactor
    facts.eidSearch = eidSearch
    facts.configExists = FileManager.default.fileExists(atPath: configPath ?? DaemonConfiguration.defaultPath)
    return facts
  }
}
