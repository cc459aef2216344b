# Sourced by Fuzz/run.sh and Fuzz/run-hci.sh: builds the project's modules for a libFuzzer
# harness without SwiftPM and without rewriting a source.
#
#   fuzz_module OUT NAME SOURCE...
#
# compiles SOURCE... as the module NAME, instrumented for libFuzzer and AddressSanitizer
# (swiftc -sanitize=fuzzer,address -c: coverage without libFuzzer's main), into OUT/NAME.o and
# OUT/NAME.swiftmodule, with -enable-testing so that the harness reaches the parsers' internal
# API through `@testable import NAME`. Modules built earlier in OUT are importable (-I OUT), so
# `import BeaconCore` in GZone resolves to the real module. A harness that needs part of a module
# (BridgeDaemon's configuration reader) gets a module of that name made of those files alone:
# their imports and their callers' imports are the ones in Sources/.
#
#   fuzz_link OUT HARNESS.swift EXECUTABLE
#
# links the harness with every module in OUT and libFuzzer's main.
fuzz_module() {
  local out=$1 name=$2
  shift 2
  mkdir -p "$out"
  swiftc -sanitize=fuzzer,address -parse-as-library -O -g -enable-testing -wmo -c \
    -module-name "$name" -package-name beaconbridge -I "$out" \
    -emit-module -emit-module-path "$out/$name.swiftmodule" \
    "$@" -o "$out/$name.o"
}

fuzz_link() {
  local out=$1 harness=$2 executable=$3
  # lld: gold warns about every ASan helper symbol.
  swiftc -sanitize=fuzzer,address -parse-as-library -O -g -use-ld=lld -module-name FuzzHarness \
    -package-name beaconbridge -I "$out" "$harness" "$out"/*.o -o "$executable"
}
