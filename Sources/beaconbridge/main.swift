import BeaconBridgeCLI
import BeaconCore
import BridgeDaemon

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

// First: a closed stdin/stdout/stderr must not lend its number to the next open(2).
StandardStreams.claim()
MallocTuning.useOneArena()
signal(SIGPIPE, SIG_IGN)
// The arguments as bytes: CommandLine.arguments would repair a bad byte with U+FFFD.
let status = await CLI.main(raw: CLI.processArguments())
exit(status)
