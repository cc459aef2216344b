import BeaconBridgeCLI
import BridgeDaemon

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

MallocTuning.useOneArena()
signal(SIGPIPE, SIG_IGN)
let status = await CLI.main(Array(CommandLine.arguments.dropFirst()))
exit(status)
