#!/usr/bin/env bash
# Checks the system files: the unit's exposure and `verify` output, the sysusers entry,
# the udev rule, the D-Bus policy on a private bus with the real daemon, `make install` and the
# .deb. Prints one PASS/FAIL line per check and "N passed, N failed"; exits non-zero on a failure.
#
#   scripts/check-system-files.sh        (`make test-system-files`: builds the release binary first)
#
# Runs as root: the policy test runs processes as other users (setpriv) and gives them a private
# /etc/passwd with the beaconbridge user in a private mount namespace (unshare -m), so the host's
# user database is never touched.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
MAX_EXPOSURE=1.6
MAX_EXPOSURE_HCI=2.0

# ---------------------------------------------------------------------------------------------
# The D-Bus policy test, run inside `unshare -m` by the main script: policy_test WORKDIR BIN
# ---------------------------------------------------------------------------------------------
if [ "${1:-}" = "--policy-test" ]; then
  T=$2 bin=$3
  results=$T/results
  pass() { echo "PASS  $*" | tee -a "$results"; }
  fail() { echo "FAIL  $*" | tee -a "$results"; }
  pids=()
  cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
  trap cleanup EXIT

  # The user database with beaconbridge and a test operator (group beaconbridge) in it.
  for f in passwd group shadow gshadow; do mount --bind "$T/ids/etc/$f" "/etc/$f" || exit 1; done

  dbus-daemon --config-file="$T/bus.conf" --nofork --print-address=1 >"$T/bus.address" 2>"$T/bus.log" &
  pids+=($!)
  export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/bus.sock"
  for _ in $(seq 50); do [ -S "$T/bus.sock" ] && break; sleep 0.1; done
  call() { # call USER ARGS...: dbus-send on the test bus as USER (root: no setpriv)
    local user=$1
    shift
    if [ "$user" = root ]; then
      timeout 10 dbus-send --system --print-reply "$@" 2>&1
    else
      timeout 10 setpriv --reuid="$user" --regid="$(id -gn "$user")" --init-groups \
        dbus-send --system --print-reply "$@" 2>&1
    fi
  }
  bb() { # bb USER METHOD ARGS...: a Bridge1 call
    local user=$1 method=$2
    shift 2
    call "$user" --dest=org.beaconbridge /org/beaconbridge "org.beaconbridge.Bridge1.$method" "$@"
  }

  # bluetoothd's stand-in, owning org.bluez (as root, which the test bus allows), with hci0.
  /usr/bin/python3 -m dbusmock --system --template bluez5 >"$T/mock.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    call root --dest=org.freedesktop.DBus / org.freedesktop.DBus.NameHasOwner string:org.bluez |
      grep -q "boolean true" && break
    sleep 0.1
  done
  call root --dest=org.bluez / org.bluez.Mock.AddAdapter string:hci0 string:box >/dev/null

  # The real daemon as user beaconbridge, with the shipped (all-commented) configuration.
  mkdir -p "$T/state" && chown beaconbridge:beaconbridge "$T/state"
  setpriv --reuid=beaconbridge --regid=beaconbridge --init-groups env -u JOURNAL_STREAM \
    "$bin" run --config "$repo/etc/beaconbridge.conf" --state-dir "$T/state" 2>"$T/daemon.log" &
  pids+=($!)
  owned=no
  for _ in $(seq 150); do
    if call root --dest=org.freedesktop.DBus / org.freedesktop.DBus.NameHasOwner \
      string:org.beaconbridge | grep -q "boolean true"; then
      owned=yes
      break
    fi
    sleep 0.1
  done
  uid=$(call root --dest=org.freedesktop.DBus / org.freedesktop.DBus.GetConnectionUnixUser \
    string:org.beaconbridge | sed -n 's/.*uint32 //p')
  if [ $owned = yes ] && [ "$uid" = "$(id -u beaconbridge)" ]; then
    pass "policy: the daemon as user beaconbridge owns org.beaconbridge"
  else
    fail "policy: the daemon as user beaconbridge did not own org.beaconbridge (uid '$uid'); log:"
    sed 's/^/      /' "$T/daemon.log" "$T/bus.log"
  fi
  scanning=""
  for _ in $(seq 100); do
    scanning=$(bb nobody Status | grep -o '"scanning":"[^"]*"' || true)
    [ -n "$scanning" ] && break
    sleep 0.1
  done
  if [ -n "$scanning" ]; then
    pass "policy: the daemon reaches org.bluez as user beaconbridge ($scanning)"
  else
    fail "policy: the daemon is not scanning through org.bluez; log:"
    sed 's/^/      /' "$T/daemon.log"
  fi

  expect_allowed() { # expect_allowed LABEL OUTPUT: any reply or error but AccessDenied
    if grep -q "AccessDenied" <<<"$2" || [ -z "$2" ]; then fail "policy: $1: ${2:-(no reply)}"; else pass "policy: $1"; fi
  }
  expect_denied() {
    if grep -q "org.freedesktop.DBus.Error.AccessDenied" <<<"$2"; then
      pass "policy: $1"
    else
      fail "policy: $1: expected AccessDenied, got: $(head -3 <<<"$2")"
    fi
  }
  uuid=E2C56DB5-DFFB-48D2-B060-D0F5A71096E0

  # An unprivileged user: reads, introspects, pings; nothing else.
  out=$(bb nobody Status)
  if grep -q '"armed"' <<<"$out"; then pass "policy: nobody may call Status"; else fail "policy: nobody calls Status: $out"; fi
  out=$(bb nobody Pairings)
  if grep -q 'string "\[' <<<"$out"; then pass "policy: nobody may call Pairings"; else fail "policy: nobody calls Pairings: $out"; fi
  out=$(call nobody --dest=org.beaconbridge /org/beaconbridge org.freedesktop.DBus.Introspectable.Introspect)
  if grep -q "org.beaconbridge.Bridge1" <<<"$out"; then pass "policy: nobody may introspect"; else fail "policy: nobody introspects: $out"; fi
  expect_denied "nobody may not Pair" "$(bb nobody Pair string:$uuid int32:1 int32:7 string:UNIT-9 string:)"
  expect_denied "nobody may not Unpair" "$(bb nobody Unpair string:UNIT-9)"
  expect_denied "nobody may not TripStart" "$(bb nobody TripStart string:t1)"
  expect_denied "nobody may not TripEvents" "$(bb nobody TripEvents string:t1 'string:[]')"
  expect_denied "nobody may not TripEnd" "$(bb nobody TripEnd string:t1)"
  expect_denied "nobody may not TripAssign" "$(bb nobody TripAssign string:t1 string:UNIT-9)"
  expect_denied "nobody may not call Pair without an interface" \
    "$(timeout 10 setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '
import dbus, sys
try:
    dbus.SystemBus().call_blocking("org.beaconbridge", "/org/beaconbridge", None, "Pair", "siiss",
                                   (sys.argv[1], 1, 7, "UNIT-9", ""))
    print("method return")
except dbus.DBusException as e:
    print(e.get_dbus_name(), e.get_dbus_message())
' "$uuid" 2>&1)"
  expect_denied "nobody may not own org.beaconbridge" \
    "$(call nobody --dest=org.freedesktop.DBus / org.freedesktop.DBus.RequestName string:org.beaconbridge uint32:0)"

  # Group beaconbridge: the privileged calls, but not the name.
  out=$(bb bbop Pair string:$uuid int32:1 int32:7 string:UNIT-7 string:van7)
  if grep -q "method return" <<<"$out"; then pass "policy: group beaconbridge may Pair"; else fail "policy: group beaconbridge Pair: $out"; fi
  expect_allowed "group beaconbridge may TripStart" "$(bb bbop TripStart string:t1)"
  expect_allowed "group beaconbridge may TripEvents" "$(bb bbop TripEvents string:t1 'string:[{"type":"braking","at":1}]')"
  expect_allowed "group beaconbridge may TripEnd" "$(bb bbop TripEnd string:t1)"
  expect_allowed "group beaconbridge may TripAssign" "$(bb bbop TripAssign string:t1 string:UNIT-7)"
  out=$(bb bbop Unpair string:UNIT-7)
  if grep -q "uint32 1" <<<"$out"; then pass "policy: group beaconbridge may Unpair"; else fail "policy: group beaconbridge Unpair: $out"; fi
  irk=ec0234a357c8ad05341010a60a397d9b
  expect_denied "nobody may not PairWithKey" \
    "$(bb nobody PairWithKey string:rpa string:$irk int32:-1 int64:-1 string:UNIT-K string:)"
  out=$(bb bbop PairWithKey string:rpa string:$irk int32:-1 int64:-1 string:UNIT-K string:)
  expect_denied "group beaconbridge may not PairWithKey (it carries a key)" "$out"
  if grep -qi "$irk" <<<"$out"; then fail "policy: the refusal repeats the key"; else pass "policy: the refusal does not repeat the key"; fi
  expect_denied "group beaconbridge may not own org.beaconbridge" \
    "$(call bbop --dest=org.freedesktop.DBus / org.freedesktop.DBus.RequestName string:org.beaconbridge uint32:0)"

  # root: everything.
  out=$(bb root Pair string:$uuid int32:1 int32:8 string:UNIT-8 string:)
  if grep -q "method return" <<<"$out"; then pass "policy: root may Pair"; else fail "policy: root Pair: $out"; fi
  out=$(bb root PairWithKey string:rpa string:$irk int32:-1 int64:-1 string:UNIT-K string:)
  if grep -q '"authentication":"rpa"' <<<"$out" && ! grep -qi "$irk" <<<"$out"; then
    pass "policy: root may PairWithKey, and the reply holds no key"
  else
    fail "policy: root PairWithKey: $out"
  fi
  out=$(bb nobody Pairings)
  if grep -q '"authentication":"rpa"' <<<"$out" && ! grep -qi "$irk" <<<"$out"; then
    pass "policy: Pairings lists the pairing by key without its key"
  else
    fail "policy: Pairings after PairWithKey: $out"
  fi
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# The main script.
# ---------------------------------------------------------------------------------------------
T=$(mktemp -d /tmp/bb-sysfiles.XXXXXX)
chmod 0755 "$T"
trap 'rm -rf "$T"' EXIT
results=$T/results
: >"$results"
pass() { echo "PASS  $*" | tee -a "$results"; }
fail() { echo "FAIL  $*" | tee -a "$results"; }
finish() {
  local p f
  p=$(grep -c '^PASS' "$results")
  f=$(grep -c '^FAIL' "$results")
  echo "check-system-files: $p passed, $f failed"
  [ "$f" -eq 0 ]
  exit $?
}
if [ "$(id -u)" -ne 0 ]; then
  fail "these checks run as root (setpriv, unshare -m); run: sudo make test-system-files"
  finish
fi

# 1. Exposure.
exposure() { # exposure ARGS...: the overall exposure number
  systemd-analyze security --offline=true "$@" 2>&1 | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p'
}
e=$(exposure systemd/beaconbridge.service)
if [ -n "$e" ] && awk -v e="$e" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(e <= m) }'; then
  pass "exposure of beaconbridge.service is $e (at most $MAX_EXPOSURE)"
else
  fail "exposure of beaconbridge.service is '${e:-?}', above $MAX_EXPOSURE:"
  systemd-analyze security --offline=true systemd/beaconbridge.service 2>&1 | grep '✗' | sed 's/^/      /'
fi

# 2. make install into a fresh DESTDIR.
root=$T/root
if make --no-print-directory install DESTDIR="$root" PREFIX=/usr >"$T/install.log" 2>&1; then
  pass "make install DESTDIR=… PREFIX=/usr"
else
  fail "make install DESTDIR=… failed:"
  sed 's/^/      /' "$T/install.log"
fi
installed=(usr/bin/beaconbridge usr/lib/beaconbridge/beaconbridged usr/lib/systemd/system/beaconbridge.service
  usr/lib/udev/rules.d/90-beaconbridge.rules usr/lib/sysusers.d/beaconbridge.conf
  usr/share/dbus-1/system.d/org.beaconbridge.conf usr/share/beaconbridge/beaconbridge-hci.conf
  etc/beaconbridge/beaconbridge.conf
  usr/share/man/man1/beaconbridge.1.gz usr/share/man/man5/beaconbridge.conf.5.gz
  usr/share/man/man7/beaconbridge-dbus.7.gz usr/share/bash-completion/completions/beaconbridge
  usr/share/zsh/vendor-completions/_beaconbridge usr/share/fish/vendor_completions.d/beaconbridge.fish)
missing=()
for f in "${installed[@]}"; do [ -f "$root/$f" ] || missing+=("$f"); done
if [ ${#missing[@]} -eq 0 ]; then pass "make install put all ${#installed[@]} files in place"; else fail "make install missed: ${missing[*]}"; fi
if [ -x "$root/usr/bin/beaconbridge" ] && ! ldd "$root/usr/bin/beaconbridge" | grep -q /opt/swift &&
  "$root/usr/bin/beaconbridge" --version >/dev/null; then
  pass "the installed binary runs without the toolchain (no /opt/swift in ldd)"
else
  fail "the installed binary needs the toolchain or does not run: $(ldd "$root/usr/bin/beaconbridge" 2>&1 | grep /opt/swift)"
fi
# `beaconbridge run` execs the daemon's executable from ../lib/beaconbridge (the policy test
# below runs it); the daemon links neither the toolchain nor Foundation, ICU or libcurl.
daemon="$root/usr/lib/beaconbridge/beaconbridged"
bogus=$("$daemon" --bogus 2>&1) && bogus_status=0 || bogus_status=$?
if [ -x "$daemon" ] && ! ldd "$daemon" | grep -Eq '/opt/swift|libcurl|libicu|libFoundation' &&
  [ "$bogus_status" = 64 ] && grep -q "started by 'beaconbridge run'" <<<"$bogus"; then
  pass "the installed daemon executable runs without the toolchain, Foundation, ICU or libcurl"
else
  fail "the installed daemon executable: $(ls -l "$daemon" 2>&1; ldd "$daemon" 2>&1 | head -20)"
fi
# Linked as docs/PERFORMANCE.md says ("Where the daemon's memory goes", the release link): libstdc++
# static, no exported symbols, the functions it runs laid out first from a current list.
exported=$(readelf --dyn-syms -W "$daemon" | awk 'NR > 3 && $7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK")' | wc -l)
layout=$(python3 Benchmarks/code-order.py --check .build/release/beaconbridged 2>&1) && layout_ok=1 || layout_ok=0
if ! ldd "$daemon" | grep -q 'libstdc++' && [ "$exported" -lt 100 ] && [ "$layout_ok" = 1 ]; then
  pass "the daemon links libstdc++ statically, exports $exported symbols; $layout"
else
  fail "the daemon's link: libstdc++ $(ldd "$daemon" | grep -c 'libstdc++') (want 0), $exported exported symbols (want < 100); $layout"
fi
echo "# edited" >>"$root/etc/beaconbridge/beaconbridge.conf"
make --no-print-directory install-files DESTDIR="$root" PREFIX=/usr >/dev/null 2>&1
if tail -1 "$root/etc/beaconbridge/beaconbridge.conf" | grep -q "# edited"; then
  pass "make install keeps an existing /etc/beaconbridge/beaconbridge.conf"
else
  fail "make install overwrote an existing /etc/beaconbridge/beaconbridge.conf"
fi

# 3. systemd-analyze verify, in the installed root (it checks that ExecStart= exists, and needs
# the units the service names: the host's are copied in).
mkdir -p "$root/usr/lib/systemd/system" "$root/usr/bin"
cp -an /usr/lib/systemd/system/. "$root/usr/lib/systemd/system/"
cp -n /usr/bin/kill "$root/usr/bin/kill"
ln -sfn usr/bin "$root/bin"
ln -sfn usr/lib "$root/lib"
out=$(systemd-analyze verify --root="$root" beaconbridge.service 2>&1)
if [ -z "$out" ]; then pass "systemd-analyze verify beaconbridge.service prints nothing"; else fail "systemd-analyze verify:"$'\n'"$out"; fi
# The check can fail: a broken copy is reported.
sed 's/^Type=notify/Type=notify\nBogusSetting=1/' "$root/usr/lib/systemd/system/beaconbridge.service" \
  >"$root/usr/lib/systemd/system/bb-broken.service"
if [ -n "$(systemd-analyze verify --root="$root" bb-broken.service 2>&1)" ]; then
  pass "systemd-analyze verify reports a broken copy (the check can fail)"
else
  fail "systemd-analyze verify did not report a unit with an unknown setting"
fi
rm -f "$root/usr/lib/systemd/system/bb-broken.service"
# With the HCI drop-in.
mkdir -p "$root/etc/systemd/system/beaconbridge.service.d"
cp "$root/usr/share/beaconbridge/beaconbridge-hci.conf" "$root/etc/systemd/system/beaconbridge.service.d/hci.conf"
out=$(systemd-analyze verify --root="$root" beaconbridge.service 2>&1)
if [ -z "$out" ]; then pass "systemd-analyze verify with the HCI drop-in prints nothing"; else fail "verify with the HCI drop-in:"$'\n'"$out"; fi
eh=$(exposure --root="$root" beaconbridge.service)
caps=$(systemd-analyze security --offline=true --root="$root" beaconbridge.service 2>&1 | grep -c '✗ CapabilityBoundingSet=~CAP_NET_\(ADMIN\|(BIND\)')
if [ -n "$eh" ] && awk -v e="$eh" -v m="$MAX_EXPOSURE_HCI" 'BEGIN { exit !(e <= m) }' && [ "$caps" -eq 2 ]; then
  pass "exposure with the HCI drop-in is $eh (at most $MAX_EXPOSURE_HCI; it adds CAP_NET_RAW, CAP_NET_ADMIN only)"
else
  fail "exposure with the HCI drop-in is '${eh:-?}' (at most $MAX_EXPOSURE_HCI) with $caps network capabilities"
fi
rm -rf "$root/etc/systemd/system/beaconbridge.service.d"

# 4. sysusers: the user, its group, and membership of bluetooth, in a copy of the user database.
ids=$T/ids
mkdir -p "$ids/etc"
for f in passwd group shadow gshadow; do cp -p "/etc/$f" "$ids/etc/$f"; done
printf 'u bbop - "beaconbridge test operator" /nonexistent /usr/sbin/nologin\nm bbop beaconbridge\n' >"$T/bbop.conf"
if systemd-sysusers --root="$ids" "$repo/systemd/beaconbridge.sysusers" "$T/bbop.conf" >"$T/sysusers.log" 2>&1 &&
  grep -q '^beaconbridge:x:[0-9]*:[0-9]*:.*:/nonexistent:/usr/sbin/nologin$' "$ids/etc/passwd" &&
  grep -q '^beaconbridge:x:' "$ids/etc/group" &&
  grep -Eq '^bluetooth:x:[0-9]+:(.*,)?beaconbridge(,|$)' "$ids/etc/group"; then
  pass "sysusers: user and group beaconbridge (home /nonexistent), member of bluetooth"
else
  fail "sysusers:"$'\n'"$(cat "$T/sysusers.log")"
fi

# 5. The udev rule. systemd 252 has no `udevadm verify`, and there is no Bluetooth device here:
# `udevadm test` on the loopback device parses every rules file (in a mount namespace where
# /etc/udev/rules.d holds ours) and names any line it cannot parse; then a copy whose match is
# rewritten to the loopback device shows what the assignments produce.
udev_test() { # udev_test RULESDIR: udevadm test on lo with RULESDIR as /etc/udev/rules.d
  unshare -m sh -c "mount --bind '$1' /etc/udev/rules.d && mount -t tmpfs tmpfs /run &&
    udevadm test --action=add /sys/class/net/lo" 2>&1
}
mkdir -p "$T/rules" "$T/rules-lo"
cp "$root/usr/lib/udev/rules.d/90-beaconbridge.rules" "$T/rules/"
out=$(udev_test "$T/rules")
if grep -q "Reading rules file: /etc/udev/rules.d/90-beaconbridge.rules" <<<"$out" &&
  ! grep -v "Reading rules file" <<<"$out" | grep -q "90-beaconbridge.rules"; then
  pass "udev: 90-beaconbridge.rules parses cleanly (udevadm test)"
else
  fail "udev: 90-beaconbridge.rules:"$'\n'"$(grep 90-beaconbridge <<<"$out")"
fi
if ! grep -q "beaconbridge.service" <<<"$out"; then
  pass "udev: the rule leaves other devices alone (loopback gets no SYSTEMD_WANTS)"
else
  fail "udev: the rule matched the loopback device"
fi
sed 's/SUBSYSTEM=="bluetooth", ENV{DEVTYPE}=="host"/SUBSYSTEM=="net", KERNEL=="lo"/' \
  "$T/rules/90-beaconbridge.rules" >"$T/rules-lo/90-beaconbridge.rules"
out=$(udev_test "$T/rules-lo")
if grep -q '^SYSTEMD_WANTS=.*beaconbridge.service' <<<"$out" && grep -q '^TAGS=.*:systemd:' <<<"$out"; then
  pass "udev: a matching device gets TAGS=:systemd: and SYSTEMD_WANTS=beaconbridge.service"
else
  fail "udev: the rule's assignments did not take:"$'\n'"$(grep -E '^(TAGS|SYSTEMD_WANTS)=' <<<"$out")"
fi

# 6. The D-Bus policy, on a private dbus-daemon with the system bus's default policy, the
# installed policy file, and (for the test only) root allowed to own org.bluez for the mock.
cat >"$T/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$T/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <policy user="root">
    <allow own="org.bluez"/>
    <allow send_destination="org.bluez"/>
  </policy>
  <include>$root/usr/share/dbus-1/system.d/org.beaconbridge.conf</include>
</busconfig>
EOF
before=$(grep -c 'policy:' "$results")
unshare -m "$0" --policy-test "$T" "$root/usr/bin/beaconbridge"
[ "$(grep -c 'policy:' "$results")" -gt "$before" ] || fail "policy: the test did not run (unshare -m?)"

# 7. The man pages and the completions, as installed.
for page in "$root"/usr/share/man/man?/beaconbridge*.gz; do
  name=${page#"$root"/usr/share/man/}
  warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null)
  warnings+=$(zcat "$page" | groff -ww -z -man 2>&1)
  text=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$page" 2>/dev/null)
  if [ -z "$warnings" ] && grep -q '^NAME' <<<"$text" && [ "$(wc -l <<<"$text")" -gt 30 ] &&
    gzip -l "$page" >/dev/null; then
    pass "man: $name renders without warnings (man --warnings, groff -ww; $(wc -l <<<"$text") lines)"
  else
    fail "man: $name:"$'\n'"$warnings"
  fi
done
# `man beaconbridge` finds the pages by name under the installed MANPATH.
if [ "$(MANPATH="$root/usr/share/man" man -w beaconbridge beaconbridge.conf beaconbridge-dbus 2>&1 | wc -l)" = 3 ]; then
  pass "man: man -w finds beaconbridge(1), beaconbridge.conf(5) and beaconbridge-dbus(7) by name"
else
  fail "man: man -w: $(MANPATH="$root/usr/share/man" man -w beaconbridge beaconbridge.conf beaconbridge-dbus 2>&1)"
fi
page1=$(LC_ALL=C.UTF-8 MANWIDTH=200 man -l "$root/usr/share/man/man1/beaconbridge.1.gz" 2>/dev/null)
miss=()
for command in $("$root/usr/bin/beaconbridge" --help | sed -n '/^COMMANDS:/,/^$/s/^  \([a-z]*\) .*/\1/p'); do
  grep -q "^   $command\$" <<<"$page1" || miss+=("$command")
  for option in $("$root/usr/bin/beaconbridge" "$command" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    sed -n "/^   $command\$/,/^   [a-z]*\$/p" <<<"$page1" | grep -q -- "$option" || miss+=("$command $option")
  done
done
if [ ${#miss[@]} -eq 0 ]; then
  pass "man: beaconbridge(1) has every command of --help, each with every option its --help names"
else
  fail "man: beaconbridge(1) lacks: ${miss[*]}"
fi
scripts/check-completions.sh "$root" 2>&1 | tee -a "$results"
grep -q '^PASS  completion' "$results" || fail "completion: scripts/check-completions.sh did not run"

# 8. The .deb.
if make --no-print-directory deb >"$T/deb.log" 2>&1; then
  pass "make deb: $(tail -1 "$T/deb.log")"
else
  fail "make deb:"$'\n'"$(tail -20 "$T/deb.log")"
fi
deb=$(ls -t build/beaconbridge_*_*.deb 2>/dev/null | head -1)
if [ -n "$deb" ]; then
  info=$(dpkg-deb --info "$deb")
  contents=$(dpkg-deb --contents "$deb")
  conffiles=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)
  depends=$(sed -n 's/^ Depends: //p' <<<"$info")
  miss=()
  for p in bluez dbus libdbus-1-3 libsqlite3-0 libbluetooth3 libcurl4 libmosquitto1; do
    grep -Eq "(^|, )$p(,|$| )" <<<"$depends" || miss+=("$p")
  done
  if [ ${#miss[@]} -eq 0 ]; then pass "deb: Depends: $depends"; else fail "deb: Depends lacks ${miss[*]}: $depends"; fi
  miss=()
  for f in "${installed[@]}"; do grep -q " \./$f\$" <<<"$contents" || miss+=("$f"); done
  if [ ${#miss[@]} -eq 0 ]; then pass "deb: contents list all ${#installed[@]} files"; else fail "deb: contents lack ${miss[*]}"; fi
  if [ "$conffiles" = /etc/beaconbridge/beaconbridge.conf ]; then
    pass "deb: conffiles is /etc/beaconbridge/beaconbridge.conf"
  else
    fail "deb: conffiles is '$conffiles'"
  fi
  scripts=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst ./prerm ./postrm)
  if grep -q ' postinst ' <<<"$info" && grep -q ' prerm ' <<<"$info" && grep -q ' postrm ' <<<"$info" &&
    grep -q 'systemd-sysusers .*beaconbridge.conf' <<<"$scripts" &&
    grep -q "deb-systemd-helper enable 'beaconbridge.service'" <<<"$scripts" &&
    grep -q "deb-systemd-invoke stop 'beaconbridge.service'" <<<"$scripts" &&
    grep -q "deb-systemd-helper purge 'beaconbridge.service'" <<<"$scripts" &&
    ! grep -E '^\s*systemctl' <<<"$scripts" | grep -qv daemon-reload; then
    pass "deb: postinst (sysusers, enable, start), prerm (stop), postrm (purge) through deb-systemd-helper/-invoke"
  else
    fail "deb: maintainer scripts missing or calling systemctl"
  fi
  for f in usr/share/doc/beaconbridge/copyright usr/share/doc/beaconbridge/changelog.gz; do
    grep -q " \./$f\$" <<<"$contents" || fail "deb: no /$f"
  done
  if dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/beaconbridge/copyright | head -1 |
    grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/'; then
    pass "deb: a machine-readable copyright and changelog.gz in /usr/share/doc/beaconbridge"
  else
    fail "deb: the copyright file is not DEP-5"
  fi
  # The maintainer scripts for real, in a DPKG_ROOT (deb-systemd-helper and systemd-sysusers
  # honour it; nothing on this host changes): install, remove, reinstall, purge.
  R=$T/dpkg-root
  debpath=$(realpath "$deb")
  mkdir -p "$R" "$T/ctrl"
  dpkg-deb -x "$debpath" "$R" && dpkg-deb -e "$debpath" "$T/ctrl"
  link=$R/etc/systemd/system/multi-user.target.wants/beaconbridge.service
  steps=()
  run_script() { DPKG_ROOT=$R DPKG_MAINTSCRIPT_PACKAGE=beaconbridge DPKG_MAINTSCRIPT_NAME=$1 sh -e "$T/ctrl/$1" "${@:2}" >>"$T/scripts.log" 2>&1 || steps+=("$1 ${*:2} failed"); }
  run_script postinst configure ""
  grep -q '^beaconbridge:x:.*:/nonexistent:' "$R/etc/passwd" 2>/dev/null || steps+=("install: no user")
  [ -L "$link" ] && [ -f "$R$(readlink "$link")" ] || steps+=("install: not enabled ($(readlink "$link"))")
  mkdir -p "$R/var/lib/beaconbridge" && echo pairings >"$R/var/lib/beaconbridge/beaconbridge.sqlite"
  run_script prerm remove
  (cd "$R" && dpkg-deb -c "$debpath" | awk '{print $6}' | grep -v '/$' | grep -v '^\./etc/' | sed 's|^\./||' | xargs rm -f)
  run_script postrm remove
  [ -L "$link" ] && [ ! -e "$R$(readlink "$link")" ] || steps+=("remove: the enablement link should stay, dangling")
  [ -f "$R/var/lib/beaconbridge/beaconbridge.sqlite" ] || steps+=("remove: the state went")
  dpkg-deb -x "$debpath" "$R"
  run_script postinst configure "" # from config-files, as after remove
  [ -L "$link" ] && [ -f "$R$(readlink "$link")" ] || steps+=("reinstall: not enabled again")
  (cd "$R" && dpkg-deb -c "$debpath" | awk '{print $6}' | grep -v '/$' | sed 's|^\./||' | xargs rm -f)
  run_script postrm remove
  run_script postrm purge
  [ ! -e "$link" ] && [ ! -L "$link" ] || steps+=("purge: the enablement link stayed")
  [ ! -e "$R/var/lib/beaconbridge" ] || steps+=("purge: /var/lib/beaconbridge stayed")
  [ ! -e "$R/etc/beaconbridge" ] || steps+=("purge: /etc/beaconbridge stayed")
  ! find "$R/var/lib/systemd" -name '*beaconbridge*' 2>/dev/null | grep -q . ||
    steps+=("purge: deb-systemd-helper state stayed: $(find "$R/var/lib/systemd" -name '*beaconbridge*')")
  if [ ${#steps[@]} -eq 0 ]; then
    pass "deb: maintainer scripts in a DPKG_ROOT: install enables, remove keeps state and a dangling link, reinstall re-enables, purge removes link, state and /etc/beaconbridge"
  else
    fail "deb: maintainer scripts: ${steps[*]}"$'\n'"$(sed 's/^/      /' "$T/scripts.log")"
  fi
  if grep -q '^lintian: no errors, no warnings' "$T/deb.log"; then
    pass "deb: lintian reports no error and no warning"
  else
    fail "deb: lintian:"$'\n'"$(sed -n '/^lintian /,$p' "$T/deb.log")"
  fi
  if dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/bin/beaconbridge >"$T/deb-bin" && chmod +x "$T/deb-bin" &&
    ! ldd "$T/deb-bin" | grep -q /opt/swift; then
    pass "deb: the binary links nothing from /opt/swift ($(du -h "$deb" | cut -f1) .deb)"
  else
    fail "deb: the binary links the toolchain"
  fi
else
  fail "deb: no build/beaconbridge_*.deb"
fi

finish
