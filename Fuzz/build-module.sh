# Sourced by Fuzz/run.sh: builds the project's modules for a libFuzzer harness without SwiftPM
# and without rewriting a source.
#
#   fuzz_build DIR HARNESS.swift EXECUTABLE
#
# builds the modules HARNESS.swift imports, and the modules those import in turn, into DIR, and
# links the harness against them. The dependencies are read from the `import` lines of the
# harness and of each module's sources, so the module graph is the one the sources declare, with
# no copy of it here; fuzz_sources below is the one list of which files make each module.
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

# The files each module a harness can import is made of: a whole module of Sources/, or (DBus,
# BlueZ, BridgeDaemon) the parts the harnesses need, under the real module's name, so that none of
# those modules' C libraries is linked. Prints nothing and fails for a module that is not one.
fuzz_sources() {
  case $1 in
    BeaconCore | BeaconCrypto | EIDProvisioning | GZone | HCIParsing) find "Sources/$1" -name '*.swift' | sort ;;
    # The in-place D-Bus wire reader with its strings, reader and messages and the pure files they
    # need. Message.swift asks libdbus whether a signature is valid; the harness links no libdbus,
    # so Fuzz/dbus-wire/Signature.swift stands in for it.
    DBus)
      printf '%s\n' \
        Sources/DBus/{Wire,WireString,WireReader,WireMessage,WireValue,WireWriter,DBusValue,Names,DBusError,CString,EventCount}.swift \
        Fuzz/dbus-wire/Signature.swift ;;
    # The Device1 PropertiesChanged decoder and the one Device1 property reader, with what they
    # and the generic path need.
    BlueZ)
      printf '%s\n' \
        Sources/BlueZ/{DeviceUpdate,DevicePropertyReader,DeviceChanges,DeviceEntries,DeviceRecord,DeviceAdvertisement,ObjectTree,BlueZNames}.swift ;;
    # The configuration reader, and the D-Bus request parser with the names and key checks it uses.
    BridgeDaemon)
      find Sources/BridgeDaemon/Configuration -name '*.swift' | sort
      printf '%s\n' Sources/BridgeDaemon/GZone/GZoneConfiguration.swift \
        Sources/BridgeDaemon/Authentication/PairingKeyFile.swift \
        Sources/BridgeDaemon/Service/{BridgeRequest,BridgeServiceNames}.swift ;;
    *) return 1 ;;
  esac
}

# The modules of fuzz_sources that FILE... import, one a line.
fuzz_imports() {
  local name
  sed -nE 's/^[[:space:]]*(@testable[[:space:]]+|(public|package|internal)[[:space:]]+)?import[[:space:]]+([A-Za-z_][A-Za-z0-9_]*).*/\3/p' "$@" |
    sort -u | while read -r name; do
      if fuzz_sources "$name" >/dev/null; then echo "$name"; fi
    done
}

fuzz_build() {
  local dir=$1 harness=$2 executable=$3 order=() name
  # One build at a time in DIR (Fuzz/long.sh runs two targets at once, and they share modules);
  # the lock goes with the subshell that fuzz_build runs in.
  mkdir -p "$dir"
  exec 9>"$dir/.lock"
  flock 9
  # Depth first, so that a module comes after every module it imports.
  fuzz_visit() {
    local module=$1 dependency sources
    case " ${order[*]} " in *" $module "*) return 0 ;; esac
    mapfile -t sources < <(fuzz_sources "$module")
    for dependency in $(fuzz_imports "${sources[@]}"); do
      [ "$dependency" = "$module" ] || fuzz_visit "$dependency" || return 1
    done
    fuzz_module "$dir" "$module" "$(fuzz_imports "${sources[@]}" | grep -vx "$module" | tr '\n' ' ')" \
      "${sources[@]}" || return 1
    order+=("$module")
  }
  for name in $(fuzz_imports "$harness"); do fuzz_visit "$name" || return 1; done
  fuzz_link "$dir" "$harness" "$executable" "${order[@]}"
}

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
