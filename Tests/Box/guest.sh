#!/bin/bash
# The box tier's guest side (run by scripts/test-box.sh, inside the Debian 12 image).
#
# Runs as root from box-driver.service (scripts/box-image.sh) once systemd, PID 1, has reached
# multi-user.target. /box is the host's folder (9p): it holds this script, the .deb and
# fake_backend.py; everything observed goes to /box/out, and the host asserts on it
# (Tests/Box/check.py). This script asserts nothing. Two boots:
#
#   boot 1: install the .deb with apt-get (offline: the image holds its Depends), power off;
#   boot 2 (qemu started again on the same disk): the scenarios, then power off.
#
# facts.txt gets one "KEY VALUE" line per measured fact (timings in seconds, counts, exit
# statuses); sN-*.txt hold `systemctl show`, doctor, status and journal excerpts per scenario.
set -u
OUT=/box/out
mkdir -p "$OUT"
PHASE_FILE=/var/lib/box-test/phase
LOG=$OUT/guest.log
exec >>"$LOG" 2>&1
T0=$(date +%s.%N)
now() { date +%s.%N; }
# CLOCK_MONOTONIC in µs as systemd's *TimestampMonotonic properties and journalctl's
# short-monotonic give it (/proc/uptime: the guest never suspends). Timings come from those
# properties, not from polling, which is slow under TCG.
mono_usec() { awk '{ printf "%d", $1 * 1000000 }' /proc/uptime; }
# seconds_since USEC PROPERTY: how long after USEC systemd set the monotonic PROPERTY.
seconds_since() { awk -v a="$1" -v b="$(prop "$2")" 'BEGIN { printf "%.2f", (b - a) / 1000000 }'; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
say() { echo "[$(since "$T0") boot $(cat "$PHASE_FILE" 2>/dev/null || echo 1)] $*"; }
fact() { say "fact: $*"; echo "$*" >>"$OUT/facts.txt"; }
mark() { say "== $*"; echo "$*" >>"$OUT/steps.txt"; }
# wait_for SECONDS COMMAND...: polls COMMAND every half second; 1 when it never held.
wait_for() {
  local deadline=$(($(date +%s) + $1)); shift
  until "$@"; do
    [ "$(date +%s)" -ge "$deadline" ] && return 1
    sleep 0.5
  done
}
prop() { systemctl show beaconbridge.service -P "$1"; }
show() {
  systemctl show beaconbridge.service -p LoadState,ActiveState,SubState,Result,StatusText,NRestarts \
    -p MainPID,ExecMainCode,ExecMainStatus,UnitFileState,FragmentPath,DropInPaths >"$OUT/$1"
}
# The daemon's journal since a cursor (journalctl --cursor-file keeps it).
journal_since() { journalctl -u beaconbridge.service --no-pager -o short-monotonic --after-cursor="$1"; }
cursor() { journalctl -n 1 -o cat --show-cursor --no-pager | sed -n 's/^-- cursor: //p'; }
active() { [ "$(prop ActiveState)" = active ]; }
scanning() { prop StatusText | grep -q '^scanning'; }
active_and_scanning() { active && scanning; }
new_main_pid() { local pid; pid=$(prop MainPID); [ "$pid" != 0 ] && [ "$pid" != "$1" ] && active; }
adapter_powered() {
  busctl get-property org.bluez "/org/bluez/$1" org.bluez.Adapter1 Powered 2>/dev/null | grep -q true
}
controllers() { ls /sys/class/bluetooth 2>/dev/null | grep -c '^hci[0-9]*$'; }
# btmgmt (bt_shell) quits at the end of its standard input before the kernel's reply arrives when
# that input is not a terminal (here /dev/null): give it one that stays open while it runs.
btm() { timeout 15 btmgmt "$@" < <(sleep 15); }
mgmt_controllers() { btm info 2>/dev/null | grep -c 'Primary controller'; }
no_controllers() { [ "$(controllers)" -eq 0 ]; }

# The beacon: an iBeacon, 27 bytes of AD (the kernel adds the flags).
UUID=E2C56DB5-DFFB-48D2-B060-D0F5A71096E0
AD=$(printf '1aff4c000215%s%04x%04xc5' "${UUID//-/}" 1 7)
CONF=/etc/beaconbridge/beaconbridge.conf

# btvirt as a transient unit (so it can be stopped and started like an adapter being unplugged):
# two controllers that hear each other, hci0 scans and hci1 advertises. Under TCG a cold btvirt can
# be too slow for the kernel's HCI Reset of its first controller (Tests/VM/guest.sh): start again.
start_btvirt() {
  local attempt
  for attempt in 1 2 3; do
    fact btvirt.last_start_usec "$(mono_usec)"
    systemd-run --quiet --unit=btvirt --collect /usr/bin/btvirt -l2
    if wait_for 20 eval '[ "$(mgmt_controllers)" -ge 2 ]'; then
      say "btvirt: 2 controllers (attempt $attempt)"
      return 0
    fi
    say "btvirt attempt $attempt: mgmt lists $(mgmt_controllers) of 2 controllers; restarting it"
    systemctl stop btvirt.service
    wait_for 10 no_controllers
  done
  fact setup.btvirt_failed 1
  return 1
}
advertise() {
  btm --index 1 le on >/dev/null
  btm --index 1 power on >/dev/null
  btm --index 1 add-adv -d "$AD" -g 1 >>"$OUT/btmgmt.log" 2>&1 || fact setup.add_adv_failed 1
}
write_conf() {
  cat >"$CONF"
  chmod 0644 "$CONF"
}
good_conf() {
  write_conf <<CONF
[General]
backend = ${1:-bluez}
adapter = hci0
[ActiveBeacon]
dwellSightings = 1
dwellSeconds = 0
[Upload]
URL = ${2:-http://127.0.0.1:8080/trips}
TokenFile = /etc/beaconbridge/token
CONF
}
deb=$(ls /box/beaconbridge_*.deb | head -n 1)

# ------------------------------------------------------------------------------------------------
if [ ! -f "$PHASE_FILE" ]; then
  mark "boot1"
  fact boot1.uptime "$(cut -d' ' -f1 /proc/uptime)"
  systemd-analyze >"$OUT/boot1-analyze.txt" 2>&1
  # Install: apt-get with no network, the Depends already in the image.
  start=$(now)
  c=$(cursor)
  apt-get install -y "$deb" >"$OUT/s0-install.txt" 2>&1
  fact s0.install_exit $?
  fact s0.install_seconds "$(since "$start")"
  # The first start must succeed: active (READY=1) with no automatic restart before it, and no
  # failure in the unit's journal (a start before dbus loads the policy fails, and systemd
  # restarts the unit 5 s later: NRestarts=1).
  wait_for 60 active
  fact s0.active_after_install "$(active && echo 1 || echo 0)"
  fact s0.nrestarts "$(prop NRestarts)"
  journal_since "$c" >"$OUT/s0-journal.txt"
  id beaconbridge >"$OUT/s0-id.txt" 2>&1
  show s0-show.txt
  ls -l /sys/class/bluetooth >"$OUT/s0-adapters.txt" 2>&1
  mkdir -p /var/lib/box-test
  echo 2 >"$PHASE_FILE"
  mark "powering off after boot 1"
  sync
  systemctl poweroff
  exit 0
fi

# ------------------------------------------------------------------------------------------------
mark "boot2"
fact boot2.uptime "$(cut -d' ' -f1 /proc/uptime)"
systemd-analyze >"$OUT/boot2-analyze.txt" 2>&1
systemd-analyze blame 2>/dev/null | head -n 15 >>"$OUT/boot2-analyze.txt"
# The upload backend, started early (Python is slow to start under TCG); bearer token SECRET.
printf 'SECRET\n' >/etc/beaconbridge/token
chown root:beaconbridge /etc/beaconbridge/token
chmod 0640 /etc/beaconbridge/token
systemd-run --quiet --unit=backend --collect /usr/bin/python3 /box/fake_backend.py --port 8080 \
  --token SECRET --log "$OUT/uploads.jsonl"

# Scenario 1: the box booted with no adapter; the unit, enabled by postinst, must be active.
mark "s1 start"
fact s1.adapters "$(controllers)"
wait_for 20 active
# Active as soon as the API is served; what scanning waits for follows once the scan has looked
# (check.py asserts the text).
wait_for 20 eval 'prop StatusText | grep -qiE "(wait|no).*adapter"'
show s1-show.txt
fact s1.active_after_boot_uptime "$(cut -d' ' -f1 /proc/uptime)"
systemctl status --no-pager beaconbridge.service >"$OUT/s1-systemctl-status.txt" 2>&1
beaconbridge doctor >"$OUT/s1-doctor.txt" 2>&1
fact s1.doctor_exit $?
beaconbridge status >"$OUT/s1-status.txt" 2>&1
fact s1.status_exit $?
# `man beaconbridge` (man pages).
man -P cat beaconbridge >"$OUT/s1-man.txt" 2>&1
fact s1.man_exit $?
journalctl -b -u beaconbridge.service --no-pager -o short-monotonic >"$OUT/s1-journal.txt"
mark "s1 end"

# Scenario 2: stopped, then an adapter appears: udev's SYSTEMD_WANTS starts the unit, and it
# scans by itself.
mark "s2 start"
systemctl stop beaconbridge.service
fact s2.stopped_state "$(prop ActiveState)"
# btvirt uses the kernel's crypto through AF_ALG; loading and self-testing it on first use stalls
# btvirt for seconds under TCG (Tests/VM/guest.sh): do it now.
modprobe -a af_alg algif_hash algif_skcipher cmac ecb 2>/dev/null
/usr/bin/python3 -c 'import socket
for kind, name in (("skcipher", "ecb(aes)"), ("hash", "cmac(aes)")):
    socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0).bind((kind, name))'
modprobe hci_vhci
fact s2.modprobe_exit $?
c=$(cursor)
start=$(now)
start_btvirt
wait_for 60 active_and_scanning
fact s2.seconds_to_scanning "$(since "$start")"
show s2-show.txt
journal_since "$c" >"$OUT/s2-journal.txt"
systemctl status --no-pager beaconbridge.service >"$OUT/s2-systemctl-status.txt" 2>&1
systemctl show bluetooth.service -P ActiveState >"$OUT/s2-bluetoothd.txt"
udevadm info /sys/class/bluetooth/hci0 >"$OUT/s2-udev.txt" 2>&1
beaconbridge doctor >"$OUT/s2-doctor.txt" 2>&1
fact s2.doctor_exit $?
mark "s2 end"

# Scenario 6 (first half) and 3: the configuration with an upload URL, applied by reload; a beacon
# paired, advertised, active; a trip tagged and uploaded.
mark "s6a start"
good_conf bluez
pid=$(prop MainPID)
c=$(cursor)
systemctl reload beaconbridge.service
fact s6.reload_exit $?
wait_for 10 eval 'journal_since "$c" | grep -q "configuration reloaded"'
journal_since "$c" >"$OUT/s6a-journal.txt"
fact s6.pid_kept "$([ "$(prop MainPID)" = "$pid" ] && echo 1 || echo 0)"
mark "s6a end"

mark "s3 start"
beaconbridge pair --uuid "$UUID" --major 1 --minor 7 --device-id VAN-7 --label "van 7" \
  >"$OUT/s3-pair.txt" 2>&1
fact s3.pair_exit $?
advertise
start=$(now)
wait_for 60 eval 'beaconbridge status --json 2>/dev/null | grep -q "\"VAN-7\""'
fact s3.seconds_to_active "$(since "$start")"
beaconbridge status --json >"$OUT/s3-status-before.json" 2>&1
c=$(cursor)
{
  beaconbridge trip start --trip-id box-1
  echo '[{"type":"braking","at":1.5,"g":0.4}]' | beaconbridge trip events --trip-id box-1 -
  beaconbridge trip end --trip-id box-1
} >"$OUT/s3-trip.txt" 2>&1
fact s3.trip_exit $?
wait_for 30 eval 'grep -q "\"status\": *200" "$OUT/uploads.jsonl" 2>/dev/null'
journal_since "$c" >"$OUT/s3-journal.txt"
beaconbridge status --json >"$OUT/s3-status-after.json" 2>&1
mark "s3 end"

# Scenario 6 (second half): a bad configuration is refused on reload; the old one stays.
mark "s6b start"
cp "$CONF" /tmp/good.conf
write_conf <<'CONF'
[General]
backend = carrier-pigeon
CONF
pid=$(prop MainPID)
c=$(cursor)
systemctl reload beaconbridge.service
fact s6.bad_reload_exit $?
wait_for 10 eval 'journal_since "$c" | grep -q "not reloaded"'
# The reload ends with READY=1: the unit is active again, not "reloading".
wait_for 10 active
journal_since "$c" >"$OUT/s6b-journal.txt"
show s6b-show.txt
fact s6.bad_pid_kept "$([ "$(prop MainPID)" = "$pid" ] && echo 1 || echo 0)"
beaconbridge status --json >"$OUT/s6b-status.json" 2>&1
cp /tmp/good.conf "$CONF"
systemctl reload beaconbridge.service
mark "s6b end"

# Scenario 4: SIGSTOP; the watchdog (WatchdogSec) kills it and Restart= starts it again.
mark "s4 start"
fact s4.watchdog_usec "$(prop WatchdogUSec)"
fact s4.restart_usec "$(prop RestartUSec)"
wait_for 60 active_and_scanning
n=$(prop NRestarts)
pid=$(prop MainPID)
c=$(cursor)
start=$(mono_usec)
kill -STOP "$pid"
wait_for 120 eval '[ "$(prop MainPID)" != "$pid" ] && [ "$(prop MainPID)" != 0 ]'
fact s4.seconds_to_new_pid "$(seconds_since "$start" ExecMainStartTimestampMonotonic)"
wait_for 60 new_main_pid "$pid"
fact s4.seconds_to_active "$(seconds_since "$start" ActiveEnterTimestampMonotonic)"
fact s4.restarts "$(($(prop NRestarts) - n))"
show s4-show.txt
journal_since "$c" >"$OUT/s4-journal.txt"
mark "s4 end"

# Scenario 5: SIGSEGV; restarted.
mark "s5 start"
wait_for 60 active_and_scanning
n=$(prop NRestarts)
pid=$(prop MainPID)
c=$(cursor)
start=$(mono_usec)
kill -SEGV "$pid"
wait_for 90 eval '[ "$(prop MainPID)" != "$pid" ] && [ "$(prop MainPID)" != 0 ]'
fact s5.seconds_to_new_pid "$(seconds_since "$start" ExecMainStartTimestampMonotonic)"
wait_for 60 new_main_pid "$pid"
fact s5.seconds_to_active "$(seconds_since "$start" ActiveEnterTimestampMonotonic)"
fact s5.restarts "$(($(prop NRestarts) - n))"
show s5-show.txt
journal_since "$c" >"$OUT/s5-journal.txt"
mark "s5 end"

# Scenario 7: stop exits 0 within a few seconds.
mark "s7 start"
wait_for 60 active_and_scanning
c=$(cursor)
start=$(mono_usec)
systemctl stop beaconbridge.service
fact s7.stop_exit $?
fact s7.stop_seconds "$(seconds_since "$start" InactiveEnterTimestampMonotonic)"
show s7-show.txt
journal_since "$c" >"$OUT/s7-journal.txt"
mark "s7 end"

# Scenario 8: the adapter is removed (btvirt stopped: hci0 and hci1 vanish) and re-added; the
# daemon resumes scanning within 5 s of bluetoothd powering the adapter again.
mark "s8 start"
systemctl start beaconbridge.service
wait_for 60 active_and_scanning
fact s8.scanning_before "$(scanning && echo 1 || echo 0)"
fact s8.pid_before "$(prop MainPID)"
c=$(cursor)
systemctl stop btvirt.service
wait_for 20 no_controllers
wait_for 30 eval '! scanning'
fact s8.stopped_scanning "$(scanning && echo 0 || echo 1)"
show s8-gone-show.txt
# The absence's length, the scenario's input: long enough for a doubling retry delay to grow
# past 5 s. That the same process lived through it is checked after the resume (pid_after).
sleep 20
fact s8.btvirt_restart_usec "$(mono_usec)"
start_btvirt
# Both controllers are registered with mgmt: the adapter is back (bluetoothd powers it next).
adapter_back=$(now)
fact s8.adapter_back_usec "$(mono_usec)"
wait_for 40 adapter_powered hci0
fact s8.adapter_powered "$(adapter_powered hci0 && echo 1 || echo 0)"
wait_for 60 active_and_scanning
# Polled, an upper bound; check.py takes the journal's line when there is one.
fact s8.seconds_to_resume "$(since "$adapter_back")"
fact s8.pid_after "$(prop MainPID)"
show s8-show.txt
journal_since "$c" >"$OUT/s8-journal.txt"
advertise
mark "s8 end"

# Scenario 9: the HCI drop-in, backend = hci, bluetoothd stopped: it scans (and hears the beacon).
mark "s9 start"
systemctl stop bluetooth.service
btm --index 0 le on >/dev/null
btm --index 0 power on >/dev/null
advertise
mkdir -p /etc/systemd/system/beaconbridge.service.d
cp /usr/share/beaconbridge/beaconbridge-hci.conf /etc/systemd/system/beaconbridge.service.d/hci.conf
good_conf hci
systemctl daemon-reload
c=$(cursor)
systemctl restart beaconbridge.service
fact s9.restart_exit $?
wait_for 60 active_and_scanning
start=$(now)
wait_for 40 eval 'beaconbridge status --json 2>/dev/null | grep -q "\"minor\" *: *7"'
fact s9.seconds_to_beacon "$(since "$start")"
fact s9.bluetoothd "$(systemctl show bluetooth.service -P ActiveState)"
show s9-show.txt
beaconbridge status --json >"$OUT/s9-status.json" 2>&1
journal_since "$c" >"$OUT/s9-journal.txt"
mark "s9 end"

# Scenario 10: backend = hci without the drop-in: STATUS= and doctor say why, and it backs off.
mark "s10 start"
rm -rf /etc/systemd/system/beaconbridge.service.d
systemctl daemon-reload
c=$(cursor)
systemctl restart beaconbridge.service
fact s10.restart_exit $?
start=$(now)
sleep 20
fact s10.observed_seconds "$(since "$start")"
show s10-show.txt
beaconbridge doctor >"$OUT/s10-doctor.txt" 2>&1
fact s10.doctor_exit $?
journal_since "$c" >"$OUT/s10-journal.txt"
mark "s10 end"

# Scenario 11: remove keeps the state, reinstall keeps pairings and the outbox, purge removes it.
# A trip whose upload cannot go (no server on port 9) waits in the outbox first.
mark "s11 start"
systemctl start bluetooth.service
good_conf bluez http://127.0.0.1:9/trips
systemctl restart beaconbridge.service
wait_for 60 active
{
  beaconbridge trip start --trip-id box-2
  echo '[{"type":"braking","at":2.5,"g":0.5}]' | beaconbridge trip events --trip-id box-2 -
  beaconbridge trip end --trip-id box-2
} >"$OUT/s11-trip.txt" 2>&1
fact s11.trip_exit $?
beaconbridge pairs --json >"$OUT/s11-pairs-before.json" 2>&1
ls -la /var/lib/beaconbridge >"$OUT/s11-state-before.txt" 2>&1
find /var/lib/beaconbridge -ls >"$OUT/s11-state-files.txt" 2>&1
beaconbridge status --json >"$OUT/s11-status-before.json" 2>&1
# Upgrade: the same package over itself takes dpkg's upgrade path (prerm upgrade, postinst
# configure with the old version: a restart); the restart must not fail either.
c=$(cursor)
pid=$(prop MainPID)
n=$(prop NRestarts)
dpkg -i "$deb" >"$OUT/s11-upgrade.txt" 2>&1
fact s11.upgrade_exit $?
wait_for 60 new_main_pid "$pid"
fact s11.active_after_upgrade "$(active && echo 1 || echo 0)"
fact s11.upgrade_restarts "$(($(prop NRestarts) - n))"
journal_since "$c" >"$OUT/s11-upgrade-journal.txt"
apt-get remove -y beaconbridge >"$OUT/s11-remove.txt" 2>&1
fact s11.remove_exit $?
ls -la /var/lib/beaconbridge >"$OUT/s11-after-remove-state.txt" 2>&1
fact s11.state_kept "$([ -d /var/lib/beaconbridge ] && echo 1 || echo 0)"
fact s11.conf_kept "$([ -f "$CONF" ] && echo 1 || echo 0)"
fact s11.dangling_wants "$([ -L /etc/systemd/system/multi-user.target.wants/beaconbridge.service ] &&
  [ ! -e /etc/systemd/system/multi-user.target.wants/beaconbridge.service ] && echo 1 || echo 0)"
fact s11.removed_load_state "$(prop LoadState)"
c=$(cursor)
apt-get install -y "$deb" >"$OUT/s11-reinstall.txt" 2>&1
fact s11.reinstall_exit $?
wait_for 60 active
fact s11.active_after_reinstall "$(active && echo 1 || echo 0)"
# The unit was unloaded by remove: its restart count starts again from 0.
fact s11.reinstall_nrestarts "$(prop NRestarts)"
journal_since "$c" >"$OUT/s11-reinstall-journal.txt"
beaconbridge pairs --json >"$OUT/s11-pairs-after.json" 2>&1
beaconbridge status --json >"$OUT/s11-status-after.json" 2>&1
apt-get purge -y beaconbridge >"$OUT/s11-purge.txt" 2>&1
fact s11.purge_exit $?
fact s11.purge_state_gone "$([ -e /var/lib/beaconbridge ] && echo 0 || echo 1)"
fact s11.purge_etc_gone "$([ -e /etc/beaconbridge/beaconbridge.conf ] && echo 0 || echo 1)"
fact s11.purge_wants_gone "$([ -L /etc/systemd/system/multi-user.target.wants/beaconbridge.service ] && echo 0 || echo 1)"
fact s11.purge_dpkg "$(dpkg-query -W -f='${db:Status-Abbrev}' beaconbridge 2>/dev/null | tr -d ' ')"
mark "s11 end"

# Scenario 12 and the rest: the whole journal of both boots, and the kernel's log.
journalctl --no-pager -o short-monotonic >"$OUT/journal-all.txt"
journalctl -k --no-pager >"$OUT/dmesg.txt"
mark "done"
sync
systemctl poweroff
