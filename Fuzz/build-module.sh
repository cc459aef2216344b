# Sourced by Fuzz/run.sh and Fuzz/run-hci.sh: builds the project's modules for a libFuzzer
# harness without SwiftPM and without rewriting a source.
#
#   fuzz_module DIR NAME "DEPENDENCY..." SOURCE...
#
# compiles SOURCE... as the module NAME, which imports the modules DEPENDENCY... of DIR, instrumented for libFuzzer and AddressSanitizer
# (swiftc -sanitize=fuzzer,address -c: coverage without libFuzzer's main), into DIR/NAME.o and
# DIR/NAME.swiftmodule, with -enable-testing so that the harness reaches the parsers' internal
# API through `@testable import NAME`. Modules built earlier in DIR are importable (-I DIR), so
# `import BeaconCore` in GZone resolves to the real module. A harness that needs part of a module
# (BridgeDaemon's configuration reader) gets a module of that name made of those files alone:
# their imports and their callers' imports are the ones in Sources/. A module is built again only
# when its source list (DIR/NAME.sources), a source, a dependency or this file changed since, so
# the targets that share BeaconCore build it once. The C modules under Sources (CNettle, which
# BeaconCrypto imports) are found by their module maps, as SwiftPM finds them.
#
#   fuzz_link DIR HARNESS.swift EXECUTABLE NAME...
#
# links the harness with the modules NAME... of DIR and libFuzzer's main.
fuzz_c_modules() {
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  printf -- '-I %s ' "$here/Sources/CNettle" "$here/Sources/CHogweed"
}

fuzz_module() {
  local dir=$1 name=$2 dependencies=$3
  shift 3
  mkdir -p "$dir"
  local list inputs=("$@" "${BASH_SOURCE[0]}") dependency
  list=$(printf '%s\n' "$@")
  for dependency in $dependencies; do inputs+=("$dir/$dependency.o"); done
  if [ -f "$dir/$name.o" ] && [ "$(cat "$dir/$name.sources" 2>/dev/null)" = "$list" ] &&
    [ -z "$(find "${inputs[@]}" -newer "$dir/$name.o" 2>/dev/null)" ]; then
    return 0
  fi
  rm -f "$dir/$name.o" "$dir/$name.sources"
  swiftc -sanitize=fuzzer,address -parse-as-library -O -g -enable-testing -wmo -c \
    -module-name "$name" -package-name beaconbridge -I "$dir" $(fuzz_c_modules) \
    -emit-module -emit-module-path "$dir/$name.swiftmodule" \
    "$@" -o "$dir/$name.o" &&
    printf '%s\n' "$list" >"$dir/$name.sources"
}

fuzz_link() {
  local dir=$1 harness=$2 executable=$3
  shift 3
  local objects=() name
  for name in "$@"; do objects+=("$dir/$name.o"); done
  # lld: gold warns about every ASan helper symbol.
  swiftc -sanitize=fuzzer,address -parse-as-library -O -g -use-ld=lld -module-name FuzzHarness \
    -package-name beaconbridge -I "$dir" $(fuzz_c_modules) "$harness" "${objects[@]}" -o "$executable"
}
