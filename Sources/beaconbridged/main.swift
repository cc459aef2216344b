// The daemon's own executable: what `beaconbridge run` execs (RunCommand, DaemonExecutable).
// It links only the daemon's modules, on FoundationEssentials: no Foundation, CoreFoundation,
// ICU or FoundationNetworking, so the daemon's resident set holds none of their code
// (docs/PERFORMANCE.md, "Where the daemon's memory goes"). Users run `beaconbridge run`.
import BeaconCore
import BridgeDaemon
import Dispatch
import FoundationEssentials

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

StandardStreams.claim()
// A child the daemon spawned for one HTTP request or one URL check (libcurl stays out of the
// daemon itself).
if let status = HTTPTransfers.serveChild(arguments: CommandLine.arguments) { exit(status) }
MallocTuning.useOneArena()
MallocTuning.mapLargeBlocks()
signal(SIGPIPE, SIG_IGN)

let usage = "usage: beaconbridged [--config PATH] [--state-dir DIR] (started by 'beaconbridge run')\n"
var configPath: String?
var stateDirectory: String?
var arguments = CommandLine.arguments.dropFirst()[...]
if arguments.contains("--help") || arguments.contains("-h") {
  let help = Array(
    (usage + "The daemon's executable. Run it as 'beaconbridge run' (see 'beaconbridge run --help', "
      + "man beaconbridge), or through systemd: systemctl start beaconbridge.\n").utf8)
  _ = help.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
  exit(0)
}
while let argument = arguments.popFirst() {
  guard argument == "--config" || argument == "--state-dir", let value = arguments.popFirst(), !value.isEmpty
  else {
    let problem =
      argument == "--config" || argument == "--state-dir"
      ? "\(argument) needs a value" : "unexpected argument '\(argument)'"
    let message = Array("beaconbridged: \(problem); \(usage)".utf8)
    _ = message.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    exit(64)
  }
  if argument == "--config" { configPath = value } else { stateDirectory = value }
}
HTTPTransfers.useChildProcesses()
let environment = ProcessInfo.processInfo.environment
let daemon = Daemon(
  configPath: configPath,
  stateDirectory: StateDirectory.resolve(option: stateDirectory, environment: environment),
  environment: environment)
// The stop and reload signals wait for the daemon's SignalStream, from before any other thread
// starts: a SIGTERM right after READY=1 is a clean stop, not a lost signal (SignalStream.hold).
SignalStream.hold([SIGTERM, SIGINT, SIGHUP])
// A synchronous main whose thread parks here. An async main ends the main thread in
// dispatch_main's pthread_exit, whose forced unwind reads the binary's .eh_frame tables (about
// 0.7 MB of RSS, docs/PERFORMANCE.md); nothing in the daemon runs on the main actor.
Task.detached { exit(await daemon.run()) }
while true { DispatchSemaphore(value: 0).wait() }
