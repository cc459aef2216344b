#!/usr/bin/env bash
# Builds the .deb from the release binary: scripts/build-deb.sh VERSION ARCH OUT.deb
# (`make deb` runs it after `make release`). The tree is `make install-files` into a fresh
# staging root (binary, system files, man pages, completions), plus packaging/deb/ (control,
# maintainer scripts, the DEP-5 copyright and the changelog) and conffiles. Then lintian: any
# error or warning fails the build.
#
# The Maintainer field (and the changelog's trailer) is $DEB_MAINTAINER, or the default below.
#
# For another CPU (make deb-arm64): $DEB_TREE is that CPU's tree (scripts/arm64.sh), whose
# libraries.txt says which package holds each shared library (the host's dpkg and ldd know only
# its own), and $DEB_INSTALL_ARGS are more arguments for make install-files (the release
# binaries, STRIP, and RUN, the emulator that runs the CLI for its man page and completions).
set -euo pipefail
cd "$(dirname "$0")/.."
version=$1 arch=$2 out=$3
maintainer=${DEB_MAINTAINER:-"beaconbridge maintainers <beaconbridge@users.noreply.github.com>"}

# A native package: the changelog's newest entry must be this version.
top=$(sed -n '1s/^beaconbridge (\([^)]*\)).*/\1/p' packaging/deb/changelog)
if [ "$top" != "$version" ]; then
  echo "build-deb: packaging/deb/changelog starts at '$top', not $version: add an entry" >&2
  exit 1
fi

stage=build/deb-root
rm -rf "$stage"
mkdir -p "$stage/DEBIAN" "$(dirname "$out")"
tree=${DEB_TREE:-}
# shellcheck disable=SC2086
make --no-print-directory install-files DESTDIR="$PWD/$stage" PREFIX=/usr SYSCONFDIR=/etc \
  ${DEB_INSTALL_ARGS:-} >/dev/null

bin="$stage/usr/bin/beaconbridge"
daemon="$stage/usr/lib/beaconbridge/beaconbridged"
for b in "$bin" "$daemon"; do
  if [ -n "$tree" ]; then
    # No ldd for another CPU: the Swift runtime's libraries by name.
    if readelf -d "$b" | grep -E '\(NEEDED\).*\[lib(swift|Foundation|_Foundation|dispatch|BlocksRuntime)'; then
      echo "build-deb: $b still links the Swift runtime's shared libraries (above)" >&2
      exit 1
    fi
  elif ldd "$b" | grep -q /opt/swift; then
    echo "build-deb: $b still links the toolchain's libraries:" >&2
    ldd "$b" | grep /opt/swift >&2
    exit 1
  fi
done

# The package that holds a shared library (SONAME) in the other CPU's tree.
tree_package() {
  awk -v l="$1" '{ n = split($1, part, "/") }
    part[n] == l && $1 ~ /^(\/usr)?\/lib\/[a-z0-9_-]+-linux-gnu\// { print $2; exit }' "$tree/../libraries.txt"
}

# Depends: the packages the bus, BlueZ and every directly linked library come from, what the
# maintainer scripts run (systemd-sysusers, deb-systemd-helper/-invoke), as debhelper adds them.
# libcurl4 and libmosquitto1 are not linked (the uploader dlopens them on first use, to keep
# them out of an idle daemon's memory), so readelf does not see them: named here.
depends=(bluez dbus libdbus-1-3 libsqlite3-0 libbluetooth3 libcurl4 libmosquitto1
  "systemd | systemd-standalone-sysusers | systemd-sysusers" "init-system-helpers (>= 1.54~)")
if [ -n "$tree" ]; then
  # The tree's suite names them (trixie's libcurl4t64), so they come from its packages.
  # libc6 with the newest symbol version the binaries use (dpkg-shlibdeps would say the same).
  glibc=$(readelf -V "$bin" "$daemon" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  depends=(bluez dbus "libc6 (>= $glibc)" libdbus-1-3 libsqlite3-0 libbluetooth3
    "$(tree_package libcurl.so.4)" "$(tree_package libmosquitto.so.1)"
    "systemd | systemd-standalone-sysusers | systemd-sysusers" "init-system-helpers (>= 1.54~)")
fi
while read -r b lib; do
  if [ -n "$tree" ]; then
    pkg=$(tree_package "$lib")
    [ -n "$pkg" ] || { echo "build-deb: no package in $tree provides $lib" >&2; exit 1; }
    [ "$pkg" = libc6 ] || depends+=("$pkg")
    continue
  fi
  path=$(ldd "$b" | awk -v l="$lib" '$1 == l { print $3 }')
  [ -n "$path" ] || path=$(ldd "$b" | awk -v l="$lib" '$1 ~ l { print $1 }')
  # dpkg knows the file under /lib or /usr/lib (merged /usr): try both.
  pkg=$(dpkg -S "$path" 2>/dev/null || dpkg -S "/usr${path#/usr}" 2>/dev/null ||
    dpkg -S "${path#/usr}" 2>/dev/null || true)
  pkg=${pkg%%:*}
  [ -n "$pkg" ] || { echo "build-deb: no package provides $lib ($path)" >&2; exit 1; }
  depends+=("$pkg")
done < <(for b in "$bin" "$daemon"; do readelf -d "$b" | sed -n "s|.*(NEEDED).*\\[\\(.*\\)\\]|$b \\1|p"; done)
depends_line=$(printf '%s\n' "${depends[@]}" | awk '!seen[$0]++' | paste -sd, | sed 's/,/, /g')

# /usr/share/doc/beaconbridge: the machine-readable copyright and the changelog (a native
# package's is changelog.gz), compressed as dh_compress does.
doc="$stage/usr/share/doc/beaconbridge"
install -d -m 0755 "$doc"
sed "s|@MAINTAINER@|$maintainer|" packaging/deb/copyright >"$doc/copyright"
sed "s|@MAINTAINER@|$maintainer|" packaging/deb/changelog | gzip -9n >"$doc/changelog.gz"
chmod 0644 "$doc/copyright" "$doc/changelog.gz"

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
  -e "s/@DEPENDS@/$depends_line/" -e "s|@MAINTAINER@|$maintainer|" packaging/deb/control.in >"$stage/DEBIAN/control"
install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$stage/DEBIAN/"
# md5sums, as dh_md5sums writes it.
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
  xargs md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums"
(cd "$stage" && find etc -type f | sed 's|^|/|') >"$stage/DEBIAN/conffiles"

dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null

# --fail-on error,warning: an error or a warning fails `make deb`. Info tags are printed too.
echo "lintian $out:"
if ! lintian --fail-on error,warning --display-info --tag-display-limit 0 "$out"; then
  echo "build-deb: lintian reported errors or warnings (above)" >&2
  exit 1
fi
echo "lintian: no errors, no warnings"
echo "built $out ($(du -h "$out" | cut -f1); installed $((size / 1024)) MiB)"
