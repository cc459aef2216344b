#!/usr/bin/env bash
# The box tier's Debian 12 image (run by scripts/test-box.sh).
#
#   scripts/box-image.sh CACHE_DIR [PACKAGE...]
#
# Prints the path prefix P of a cached image: P.img (a raw ext4 root file system, never written
# to: each run boots a copy-on-write overlay), P.vmlinuz and P.initrd (the image's own kernel and
# initramfs, so the modules in the image match the booted kernel). P is CACHE_DIR/box-KEY, KEY the
# sha256 of this script and of the package set (Tests/Box/packages.txt plus the PACKAGE arguments,
# the .deb's Depends): change either and a new image is built; otherwise the cached one is reused, also by a
# fresh clone on the same machine.
#
# Building: debootstrap bookworm (minbase plus the packages) from the mirror the host's apt uses,
# then a few settings for an unattended test box (below), then mkfs.ext4 -d into a sparse 3 GiB
# file. Takes about 5 to 10 minutes and 1 GB; needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=$1
shift

mapfile -t listed < <(grep -vE '^\s*(#|$)' Tests/Box/packages.txt)
packages=$(printf '%s\n' "${listed[@]}" "$@" | sort -u | paste -sd, -)
key=$( (cat scripts/box-image.sh; echo "$packages") | sha256sum | cut -c1-16)
prefix=$cache/box-$key
if [ -s "$prefix.img" ] && [ -s "$prefix.vmlinuz" ] && [ -s "$prefix.initrd" ]; then
  echo "$prefix"
  exit 0
fi

# The Debian mirror of the host's apt sources (deb822 or one-line), else deb.debian.org.
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
  awk '/^deb / && $2 ~ /\/debian\/?$/ { print $2; exit }
       /^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }' || true)
mirror=${mirror:-http://deb.debian.org/debian}

mkdir -p "$cache"
work=$cache/build-$key.$$
trap 'rm -rf "$work"' EXIT
rm -rf "$work"
mkdir -p "$work"
root=$work/root
echo "box-image: debootstrap bookworm from $mirror into $root (5 to 10 minutes): $packages" >&2
if ! debootstrap --variant=minbase --components=main --include="$packages" bookworm "$root" "$mirror" \
  >"$work/debootstrap.log" 2>&1; then
  tail -n 30 "$work/debootstrap.log" >&2
  [ -f "$root/debootstrap/debootstrap.log" ] && tail -n 30 "$root/debootstrap/debootstrap.log" >&2
  echo "box-image: debootstrap failed (log above)" >&2
  exit 1
fi

# An unattended test box: a fixed machine-id (no first-boot prompts), a persistent journal (the
# tier reads it across both boots), root on /dev/vda, no timers that wake up during a run.
echo box >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 box\n' >"$root/etc/hosts"
echo '/dev/vda / ext4 defaults 0 1' >"$root/etc/fstab"
echo 0123456789abcdef0123456789abcdef >"$root/etc/machine-id"
mkdir -p "$root/var/log/journal" "$root/box"
chroot "$root" passwd -d root >/dev/null
for unit in systemd-firstboot.service apt-daily.timer apt-daily-upgrade.timer man-db.timer \
  e2scrub_all.timer fstrim.timer systemd-tmpfiles-clean.timer dpkg-db-backup.timer; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done

# The driver: on a kernel command line with box.driver, mount the host's folder (9p tag "box")
# on /box and run /box/guest.sh once the system is up. The script comes with each run, so editing
# the scenarios does not rebuild the image.
cat >"$root/usr/local/sbin/box-driver" <<'DRIVER'
#!/bin/sh
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 box /box || { echo "box-driver: no 9p share" >&2; exit 1; }
exec /bin/bash /box/guest.sh
DRIVER
chmod 0755 "$root/usr/local/sbin/box-driver"
cat >"$root/etc/systemd/system/box-driver.service" <<'UNIT'
[Unit]
Description=box tier driver (scripts/test-box.sh)
ConditionKernelCommandLine=box.driver
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/box-driver
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
UNIT
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/box-driver.service "$root/etc/systemd/system/multi-user.target.wants/box-driver.service"

kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -n 1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -n 1)
[ -s "$kernel" ] && [ -s "$initrd" ] || { echo "box-image: no kernel or initramfs in the image" >&2; exit 1; }
cp "$kernel" "$work/vmlinuz"
cp "$initrd" "$work/initrd"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root/debootstrap"

truncate -s 3G "$work/img"
mkfs.ext4 -q -F -L boxroot -d "$root" "$work/img"
mv "$work/vmlinuz" "$prefix.vmlinuz"
mv "$work/initrd" "$prefix.initrd"
mv "$work/img" "$prefix.img"
echo "box-image: built $prefix.img ($(du -h "$prefix.img" | cut -f1) used)" >&2
echo "$prefix"
