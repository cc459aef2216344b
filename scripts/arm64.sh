#!/usr/bin/env bash
# The arm64 cross-build with Debian's own Swift, and qemu-aarch64 to run what it builds
# (docs/arm64.md). The host (bookworm, amd64) cannot run sid's compiler, has no aarch64 Swift SDK
# and must not get binfmt_misc, so:
#
#   scripts/arm64.sh env            make (or find) the cached parts; print TREE, QEMU, BUILD, ...
#   scripts/arm64.sh paths          print where they are, making nothing
#   scripts/arm64.sh swift ARGS...  run `swift ARGS` in the amd64 sid chroot, in this repository,
#                                   with the arm64 Swift SDK (add --swift-sdk beaconbridge-arm64)
#   scripts/arm64.sh run PROG ARGS  run one arm64 program: qemu-aarch64 -L TREE PROG ARGS
#
# The parts, each made from the exact versions in scripts/arm64-pins.txt and cached under
# $BEACONBRIDGE_ARM64_CACHE (/var/cache/beaconbridge-arm64) in a folder named by a hash of its pins
# lines and this script, so a changed pin or script makes a new one and a fresh machine builds
# them all:
#   chroot-HASH  an amd64 sid tree (mmdebstrap) holding the compiler; swift runs in it by chroot,
#                in a private mount namespace with this repository, the tree and the build folder
#                bound at their own paths;
#   tree-HASH    the arm64 tree (mmdebstrap --variant=extract): trixie's libc6-dev, libstdc++ and
#                libgcc dev, the C -dev packages the project links, and sid's arm64 swiftlang and
#                libswiftlang unpacked on top; plus the Swift SDK bundle (sdks/);
#   qemu-HASH    trixie's qemu-user, for its static qemu-aarch64;
#   build-HASH-REPO  SwiftPM's scratch path for this repository's arm64 builds.
# Made in a .tmp folder and renamed when complete, so an interrupted run leaves nothing half made.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
pins="$repo/scripts/arm64-pins.txt"
cache=${BEACONBRIDGE_ARM64_CACHE:-/var/cache/beaconbridge-arm64}
mirror=${BEACONBRIDGE_ARM64_MIRROR:-http://deb.debian.org/debian}
sdk_name=beaconbridge-arm64
# The mirror's Release files may be older than their Valid-Until on a machine whose clock runs
# ahead of a mirror snapshot; the pins name exact versions, so an old index cannot give others.
apt_opts=(--aptopt='Acquire::Check-Valid-Until "false"')

die() {
  echo "scripts/arm64.sh: $*" >&2
  exit 1
}

# The pinned PACKAGE=VERSION words of one role, comma-separated for mmdebstrap --include.
pinned() { awk -v role="$1" '$1 == role { print $4 }' "$pins" | paste -sd, -; }
suite_of() { awk -v role="$1" '$1 == role { print $2; exit }' "$pins"; }
# A part's key: its pins lines and the functions of this script that make it.
key() {
  local roles=$1
  shift
  { grep -E "^($roles) " "$pins" && declare -f "$@"; } | sha256sum | cut -c1-16
}

need_root() {
  [ "$(id -u)" = 0 ] || die "making the cached toolchain needs root (mmdebstrap, chroot): run as root"
  command -v mmdebstrap >/dev/null || die "mmdebstrap is missing: scripts/install-deps.sh arm64"
}

# Drops other versions of a part, so that the cache holds one of each kind.
prune() {
  local kind=$1 keep=$2 old
  for old in "$cache/$kind"-*; do
    [ -e "$old" ] && [ "$old" != "$keep" ] && case "$old" in *.tmp) ;; *) rm -rf "$old" ;; esac
  done
  return 0
}

make_chroot() {
  [ -e "$chroot_dir/complete" ] && return 0
  need_root
  echo "arm64: making the compiler chroot $chroot_dir (sid amd64, $(pinned compiler))" >&2
  rm -rf "$chroot_dir.tmp"
  mmdebstrap "${apt_opts[@]}" --variant=apt --include="$(pinned compiler),pkgconf,libc6-dev" \
    --customize-hook='chroot "$1" dpkg --add-architecture arm64' \
    "$(suite_of compiler)" "$chroot_dir.tmp" "$mirror" >&2 ||
    die "mmdebstrap of the compiler chroot failed: is a pin in scripts/arm64-pins.txt gone from the mirror? (docs/arm64.md)"
  touch "$chroot_dir.tmp/complete"
  mv "$chroot_dir.tmp" "$chroot_dir"
  prune chroot "$chroot_dir"
}

make_qemu() {
  [ -x "$qemu" ] && return 0
  need_root
  echo "arm64: unpacking $(pinned qemu) into $qemu_dir" >&2
  rm -rf "$qemu_dir.tmp"
  mmdebstrap "${apt_opts[@]}" --variant=extract --include="$(pinned qemu)" \
    "$(suite_of qemu)" "$qemu_dir.tmp" "$mirror" >&2 || die "mmdebstrap of qemu-user failed"
  "$qemu_dir.tmp/usr/bin/qemu-aarch64" --version >/dev/null || die "qemu-aarch64 does not run here"
  mv "$qemu_dir.tmp" "$qemu_dir"
  prune qemu "$qemu_dir"
}

make_tree() {
  [ -e "$tree_root/complete" ] && return 0
  need_root
  make_chroot
  local tmp="$tree_root.tmp" root="$tree_root.tmp/root" deb f dir soname
  echo "arm64: making the arm64 tree $tree_root (trixie C side, sid Swift side)" >&2
  rm -rf "$tmp"
  mkdir -p "$tmp"
  # Every unpacked package and the shared libraries it holds, for the .deb's Depends
  # (scripts/build-deb.sh): an extract tree has no dpkg database.
  mmdebstrap "${apt_opts[@]}" --arch=arm64 --variant=extract --include="$(pinned sysroot)" \
    --extract-hook='for f in "$1"/var/cache/apt/archives/*.deb; do
        p=$(dpkg-deb --show --showformat="\${Package}" "$f")
        dpkg-deb --show --showformat="\${Package} \${Version}\n" "$f" >>"$1/../packages.txt"
        dpkg-deb --fsys-tarfile "$f" | tar -t | sed -n "s|^\./\(.*\.so[.0-9]*\)$|/\1 $p|p" >>"$1/../libraries.txt"
      done' \
    "$(suite_of sysroot)" "$root" "$mirror" >&2 ||
    die "mmdebstrap of the arm64 tree failed: is a pin in scripts/arm64-pins.txt gone from the mirror? (docs/arm64.md)"
  # sid's arm64 Swift, without its dependencies (a compiler's, not the SDK's), downloaded by
  # the chroot's apt (which knows sid and arm64).
  mkdir -p "$chroot_dir/tmp/arm64-debs"
  rm -f "$chroot_dir/tmp/arm64-debs/"*.deb
  local wanted
  wanted=$(awk '$1 == "swift" { split($4, p, "="); print p[1] ":arm64=" p[2] }' "$pins" | paste -sd' ' -)
  # shellcheck disable=SC2086
  chroot "$chroot_dir" sh -c "apt-get -o Acquire::Check-Valid-Until=false update -qq &&
    cd /tmp/arm64-debs && apt-get download -qq $wanted" >&2 ||
    die "downloading $wanted failed: is a pin in scripts/arm64-pins.txt gone from the mirror?"
  for deb in "$chroot_dir/tmp/arm64-debs/"*.deb; do
    dpkg-deb -x "$deb" "$root"
    dpkg-deb --show --showformat='${Package} ${Version}\n' "$deb" >>"$tmp/packages.txt"
  done
  rm -rf "$chroot_dir/tmp/arm64-debs"
  # What maintainer scripts and ldconfig would have made: the merged-/usr links, and a link
  # named by each shared library's SONAME.
  for dir in lib bin sbin; do [ -e "$root/$dir" ] || ln -s "usr/$dir" "$root/$dir"; done
  for f in "$root"/usr/lib/aarch64-linux-gnu/*.so* "$root"/usr/libexec/swift/lib/swift/linux/*.so; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    # (libc.so and others are linker scripts: no SONAME.)
    soname=$( (readelf -d "$f" 2>/dev/null || true) | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    if [ -n "$soname" ] && [ ! -e "$(dirname "$f")/$soname" ]; then
      ln -s "$(basename "$f")" "$(dirname "$f")/$soname"
    fi
  done
  # The compiler looks for the static runtime under usr/lib/swift_static.
  [ -e "$root/usr/lib/swift_static" ] || ln -s ../libexec/swift/lib/swift_static "$root/usr/lib/swift_static"
  # No programs: qemu -L looks a path up in the tree first, so an arm64 sed or python3 here would
  # stand in for the host's in whatever a test spawns.
  rm -rf "$root"/usr/bin/* "$root"/usr/sbin/* "$root"/usr/libexec/swift/bin
  # The Swift SDK bundle: swift build --swift-sdks-path SDKS --swift-sdk beaconbridge-arm64.
  local bundle="$tmp/sdks/$sdk_name.artifactbundle" final="$tree_root/root"
  mkdir -p "$bundle/sdk"
  cat >"$bundle/info.json" <<EOF
{
  "schemaVersion": "1.0",
  "artifacts": {
    "$sdk_name": { "type": "swiftSDK", "version": "1", "variants": [{ "path": "sdk" }] }
  }
}
EOF
  cat >"$bundle/sdk/swift-sdk.json" <<EOF
{
  "schemaVersion": "4.0",
  "targetTriples": {
    "aarch64-unknown-linux-gnu": {
      "sdkRootPath": "$final",
      "swiftResourcesPath": "$final/usr/lib/swift",
      "swiftStaticResourcesPath": "$final/usr/lib/swift_static",
      "toolsetPaths": ["toolset.json"]
    }
  }
}
EOF
  cat >"$bundle/sdk/toolset.json" <<EOF
{ "schemaVersion": "1.0", "swiftCompiler": { "extraCLIOptions": ["-use-ld=lld"] } }
EOF
  touch "$tmp/complete"
  mv "$tmp" "$tree_root"
  prune tree "$tree_root"
}

# Runs a command in the compiler chroot, in this repository, with the tree and the build folder
# at their own paths (the SDK bundle names absolute paths), in a private mount namespace that
# goes away with it.
in_chroot() {
  mkdir -p "$build"
  local mounts="" p
  for p in "$repo" "$tree_root" "$build"; do
    mounts+="mkdir -p '$chroot_dir$p' && mount --bind '$p' '$chroot_dir$p' && "
  done
  unshare --mount --propagation private -- bash -c "
    mount -t proc proc '$chroot_dir/proc' && mount --rbind /dev '$chroot_dir/dev' &&
    mount --rbind /sys '$chroot_dir/sys' && $mounts
    exec chroot '$chroot_dir' /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
      LANG=C.UTF-8 TERM=dumb \
      PKG_CONFIG_LIBDIR='$tree/usr/lib/aarch64-linux-gnu/pkgconfig:$tree/usr/share/pkgconfig' \
      PKG_CONFIG_PATH='$tree/usr/lib/aarch64-linux-gnu/pkgconfig:$tree/usr/share/pkgconfig' \
      PKG_CONFIG_SYSROOT_DIR='$tree' \
      /bin/sh -c 'cd \"\$0\" && exec \"\$@\"' '$repo' \"\$@\"" in_chroot "$@"
}

chroot_dir="$cache/chroot-$(key compiler make_chroot)"
tree_root="$cache/tree-$(key 'swift|sysroot' make_tree)"
tree="$tree_root/root"
sdks="$tree_root/sdks"
qemu_dir="$cache/qemu-$(key qemu make_qemu)"
qemu="$qemu_dir/usr/bin/qemu-aarch64"
# The build folder: also keyed by how swift runs, and by this repository's path (SwiftPM's
# build records name absolute paths).
build="$cache/build-$(key 'compiler|swift|sysroot' make_chroot make_tree in_chroot)-$(printf %s "$repo" | sha256sum | cut -c1-8)"

command=${1:-}
shift || true
case "$command" in
  env)
    make_chroot
    make_qemu
    make_tree
    echo "CHROOT=$chroot_dir"
    echo "TREE=$tree"
    echo "SDKS=$sdks"
    echo "SDK=$sdk_name"
    echo "QEMU=$qemu"
    echo "BUILD=$build"
    ;;
  paths)
    echo "CHROOT=$chroot_dir"
    echo "TREE=$tree"
    echo "QEMU=$qemu"
    echo "BUILD=$build"
    ;;
  swift)
    make_chroot
    make_tree
    in_chroot swift "$@" --swift-sdks-path "$sdks" --swift-sdk "$sdk_name" --scratch-path "$build"
    ;;
  run)
    [ -x "$qemu" ] || die "no qemu-aarch64 at $qemu: run scripts/arm64.sh env"
    [ -e "$tree_root/complete" ] || die "no arm64 tree at $tree: run scripts/arm64.sh env"
    exec "$qemu" -L "$tree" "$@"
    ;;
  *)
    sed -n '2,10s/^# \{0,1\}//p' "$0" >&2
    exit 2
    ;;
esac
