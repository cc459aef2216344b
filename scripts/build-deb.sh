#!/usr/bin/env bash
# Builds the .deb from the release binary: scripts/build-deb.sh VERSION ARCH OUT.deb
# (`make deb` runs it after `make release`). The tree is `make install-files` into a fresh
# staging root, plus packaging/deb/ (control, maintainer scripts) and conffiles.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$1 arch=$2 out=$3

stage=build/deb-root
rm -rf "$stage"
mkdir -p "$stage/DEBIAN" "$(dirname "$out")"
make --no-print-directory install-files DESTDIR="$PWD/$stage" PREFIX=/usr SYSCONFDIR=/etc >/dev/null

bin="$stage/usr/bin/beaconbridge"
if ldd "$bin" | grep -q /opt/swift; then
  echo "build-deb: $bin still links the toolchain's libraries:" >&2
  ldd "$bin" | grep /opt/swift >&2
  exit 1
fi

# Depends: the packages the bus, BlueZ and every directly linked library come from.
depends=(bluez dbus libdbus-1-3 libsqlite3-0 libbluetooth3)
while read -r lib; do
  path=$(ldd "$bin" | awk -v l="$lib" '$1 == l { print $3 }')
  [ -n "$path" ] || path=$(ldd "$bin" | awk -v l="$lib" '$1 ~ l { print $1 }')
  # dpkg knows the file under /lib or /usr/lib (merged /usr): try both.
  pkg=$(dpkg -S "$path" 2>/dev/null || dpkg -S "/usr${path#/usr}" 2>/dev/null ||
    dpkg -S "${path#/usr}" 2>/dev/null || true)
  pkg=${pkg%%:*}
  [ -n "$pkg" ] || { echo "build-deb: no package provides $lib ($path)" >&2; exit 1; }
  depends+=("$pkg")
done < <(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
depends_line=$(printf '%s\n' "${depends[@]}" | awk '!seen[$0]++' | paste -sd, | sed 's/,/, /g')

size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" \
  -e "s/@DEPENDS@/$depends_line/" packaging/deb/control.in >"$stage/DEBIAN/control"
install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$stage/DEBIAN/"
(cd "$stage" && find etc -type f | sed 's|^|/|') >"$stage/DEBIAN/conffiles"

dpkg-deb --root-owner-group -Zxz --build "$stage" "$out" >/dev/null
echo "built $out ($(du -h "$out" | cut -f1); installed $((size / 1024)) MiB)"
