import BridgeDaemon
import Foundation

/// `beaconbridge run`: the daemon.
public struct RunCommand: BridgeCommand {
  public static let name = "run"
  public static let abstract = "Run the daemon: scan, keep the active beacon, tag and upload trips."
  public static let usage = "beaconbridge run [--config PATH] [--state-dir DIR]"
  public static let discussion = """
    Reads the configuration (default /etc/beaconbridge/beaconbridge.conf; a missing default
    file means the defaults) and refuses to start on any problem in it, naming file:line. Opens
    the store in the state directory, restores undelivered trips from its outbox, starts
    scanning, and tells systemd READY=1 (Type=notify), WATCHDOG=1 and STATUS= lines when
    started by it. Logs go to stderr, with journald priority prefixes under systemd.

    SIGTERM stops gracefully (exit 0). SIGHUP reloads the configuration; a bad one is refused
    and the old one kept. Pairings made with 'beaconbridge pair' while it runs take effect
    without a restart.

    OPTIONS:
      --config PATH    The configuration file.
    \(StoreOptions.help)
    """

  public var configPath: String?
  var store: StoreOptions

  public init(_ arguments: inout Arguments) throws(UsageError) {
    configPath = try arguments.option("--config")
    store = try StoreOptions(&arguments)
  }

  /// Replaces this process with `beaconbridged` (DaemonExecutable), passing the options on.
  public func run(_ console: any Console) async -> Int32 {
    var arguments: [String] = []
    if let configPath { arguments += ["--config", configPath] }
    if let stateDir = store.stateDir { arguments += ["--state-dir", stateDir] }
    console.err("beaconbridge: \(DaemonExecutable.exec(arguments: arguments))\n")
    return ExitStatus.failure
  }
}
