#!/usr/bin/env python3
"""The box tier's assertions, on the host, over what Tests/Box/guest.sh observed.

    check.py OUT

OUT is the guest's /box/out: facts.txt ("KEY VALUE" lines: timings, counts, exit statuses), the
`systemctl show` snapshots (sN-show.txt), doctor and status outputs, journal excerpts and the
whole journal of both boots. Prints PASS or FAIL per scenario with its reasons and timings, then
"N passed, N failed"; exits 1 when any scenario failed.
"""
import json
import os
import re
import sys

OUT = sys.argv[1]
results = []


def read(name):
    try:
        with open(os.path.join(OUT, name), encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


def facts():
    found = {}
    for line in (read("facts.txt") or "").splitlines():
        key, _, value = line.partition(" ")
        found[key] = value.strip()
    return found


FACTS = facts()
steps = (read("steps.txt") or "").split("\n")
last_step = next((s for s in reversed(steps) if s), "none")


def fact(key):
    return FACTS.get(key)


def num(key):
    try:
        return float(FACTS[key])
    except (KeyError, ValueError):
        return None


def show(name):
    text = read(name)
    if text is None:
        return None
    props = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        props[key] = value
    return props


def usec(text):
    """systemd's WatchdogUSec / RestartUSec as shown ("30s", "5s", "1min 30s", "100ms")."""
    if text is None:
        return None
    total = 0.0
    for amount, unit in re.findall(r"([\d.]+)\s*(min|ms|us|s|h)", text):
        total += float(amount) * {"h": 3600, "min": 60, "s": 1, "ms": 0.001, "us": 1e-6}[unit]
    return total


class Scenario:
    # The guest's step after which each scenario's data is complete.
    STEPS = {1: "s1 end", 2: "s2 end", 3: "s3 end", 4: "s4 end", 5: "s5 end", 6: "s6b end", 7: "s7 end",
             8: "s8 end", 9: "s9 end", 10: "s10 end", 11: "s11 end", 12: "done", 13: "s7 end",
             14: "s11 end", 15: "s11 end", 16: "s1 end", 17: "s8 end"}

    def __init__(self, number, title):
        self.number, self.title, self.problems, self.notes = number, title, [], []
        self.ran = Scenario.STEPS[number] in steps

    def need(self, condition, problem):
        if not condition:
            self.problems.append(problem)
        return condition

    def note(self, text):
        self.notes.append(text)

    def done(self):
        if not self.ran:
            self.problems, self.notes = [f"did not run: the guest stopped after step {last_step!r}"], []
        results.append(self)


def lines(text, pattern):
    return [l for l in (text or "").splitlines() if re.search(pattern, l)]


# A start that did not go cleanly, in the unit's journal: the bus refused the name (the policy
# was not loaded yet), the daemon exited with a failure, or systemd scheduled a restart.
START_FAILURE = (r"not allowed to own|cannot own org\.beaconbridge|not starting|"
                 r"Main process exited, code=(exited|killed|dumped), status=[1-9]|Failed with result|"
                 r"Scheduled restart job|Start request repeated too quickly|Failed to start")


def started_cleanly(s, step, exit_key, active_key, restarts_key, journal_name):
    """One install, upgrade or reinstall: dpkg succeeded, the unit is active, systemd restarted
    it 0 times, and its journal over the step holds no failed start."""
    s.need(fact(exit_key) == "0", f"{step}: exit {fact(exit_key)}")
    s.need(fact(active_key) == "1", f"{step}: the unit is not active")
    s.need(fact(restarts_key) == "0", f"{step}: NRestarts={fact(restarts_key)}, not 0 ({journal_name})")
    journal = read(journal_name)
    if s.need(journal is not None, f"{step}: no journal ({journal_name})"):
        failures = lines(journal, START_FAILURE)
        s.need(not failures, f"{step}: {len(failures)} failure lines in {journal_name}, first: "
               f"{failures[0].strip() if failures else ''}")


# 1. -------------------------------------------------------------------------------------------
s = Scenario(1, "install, boot with no adapter: active, STATUS= waits, doctor says why")
s.need(fact("s0.install_exit") == "0", f"apt-get install ./deb exit {fact('s0.install_exit')} (s0-install.txt)")
started_cleanly(s, "install", "s0.install_exit", "s0.active_after_install", "s0.nrestarts", "s0-journal.txt")
s0 = show("s0-show.txt") or {}
s.need(s0.get("UnitFileState") == "enabled", f"after install UnitFileState={s0.get('UnitFileState')}")
s.need("bluetooth" in (read("s0-id.txt") or ""), "user beaconbridge is not in group bluetooth")
s.need(fact("s1.adapters") == "0", f"the box had {fact('s1.adapters')} adapters at boot, not 0")
p = show("s1-show.txt")
if s.need(p is not None, "no systemctl show after boot 2"):
    s.need(p["ActiveState"] == "active" and p["SubState"] == "running",
           f"ActiveState={p['ActiveState']} SubState={p['SubState']} Result={p['Result']} NRestarts={p['NRestarts']}")
    s.need(re.search(r"\b(wait\w*|no)\b.*adapter", p["StatusText"], re.I),
           f"STATUS= does not say it waits for an adapter: {p['StatusText']!r}")
    s.note(f"StatusText={p['StatusText']!r}")
doctor = read("s1-doctor.txt") or ""
s.need(re.search(r"adapter", doctor, re.I), "doctor does not say that the adapter is missing (s1-doctor.txt)")
s.done()

# 2. -------------------------------------------------------------------------------------------
s = Scenario(2, "adapter appears: udev's SYSTEMD_WANTS starts the unit, scanning starts")
s.need(fact("s2.stopped_state") in ("inactive", "failed"), f"not stopped before: {fact('s2.stopped_state')}")
s.need(not fact("setup.btvirt_failed"), "btvirt did not give 2 controllers")
udev = read("s2-udev.txt") or ""
s.need(re.search(r"SYSTEMD_WANTS=.*beaconbridge\.service", udev), "hci0 has no SYSTEMD_WANTS=beaconbridge.service")
p = show("s2-show.txt")
if s.need(p is not None, "no data"):
    s.need(p["ActiveState"] == "active", f"ActiveState={p['ActiveState']} after the adapter appeared")
    s.need(p["StatusText"].startswith("scanning"), f"STATUS={p['StatusText']!r}")
s.need(lines(read("s2-journal.txt"), r"scanning"), "no 'scanning' line in the journal")
s.note(f"{fact('s2.seconds_to_scanning')} s from btvirt to scanning")
s.done()

# 3. -------------------------------------------------------------------------------------------
s = Scenario(3, "a trip is tagged and uploaded to the guest's server (bearer token, Idempotency-Key)")
s.need(fact("s3.pair_exit") == "0", f"pair exit {fact('s3.pair_exit')}")
s.need(num("s3.seconds_to_active") is not None and num("s3.seconds_to_active") < 60,
       f"VAN-7 never became active ({fact('s3.seconds_to_active')} s)")
s.need(fact("s3.trip_exit") == "0", f"trip start/events/end exit {fact('s3.trip_exit')} (s3-trip.txt)")
uploads = []
for line in (read("uploads.jsonl") or "").splitlines():
    try:
        uploads.append(json.loads(line))
    except ValueError:
        pass
ok = [u for u in uploads if str(u.get("status")) == "200" and "box-1" in str(u.get("body"))]
if s.need(ok, f"no accepted upload of trip box-1 ({len(uploads)} requests)"):
    u = ok[0]
    s.need(u.get("key"), "no Idempotency-Key header")
    s.need(u.get("auth") == "Bearer SECRET", f"Authorization {u.get('auth')!r}")
    s.need("VAN-7" in str(u.get("body")), "the batch is not tagged VAN-7")
s.note(f"active after {fact('s3.seconds_to_active')} s")
s.done()

# 4. -------------------------------------------------------------------------------------------
s = Scenario(4, "kill -STOP: the watchdog restarts it within WatchdogSec + RestartSec")
watchdog, restart = usec(fact("s4.watchdog_usec")), usec(fact("s4.restart_usec"))
took, active_at = num("s4.seconds_to_new_pid"), num("s4.seconds_to_active")
p = show("s4-show.txt")
s.need(watchdog and watchdog > 0, f"no WatchdogSec ({fact('s4.watchdog_usec')})")
if watchdog is not None and restart is not None:
    # The new process is forked at most WatchdogSec + RestartSec after the stop; 2 s for polling.
    s.need(took is not None and took <= watchdog + restart + 2,
           f"new process after {took} s, limit {watchdog + restart + 2:.0f} s")
s.need(fact("s4.restarts") not in (None, "0"), f"NRestarts grew by {fact('s4.restarts')}")
s.need(p and p["ActiveState"] == "active", f"ActiveState={p and p['ActiveState']} after the restart")
s.need(lines(read("s4-journal.txt"), r"[Ww]atchdog timeout"), "no 'Watchdog timeout' in the journal")
s.note(f"new process {took} s, active {active_at} s after SIGSTOP (WatchdogSec {watchdog:g} s, RestartSec {restart:g} s)"
       if watchdog is not None and restart is not None else f"{took} s")
s.done()

# 5. -------------------------------------------------------------------------------------------
s = Scenario(5, "kill -SEGV: restarted")
took, active_at = num("s5.seconds_to_new_pid"), num("s5.seconds_to_active")
p = show("s5-show.txt")
if restart is not None:
    s.need(took is not None and took <= restart + 5, f"new process after {took} s, limit {restart + 5:.0f} s")
s.need(fact("s5.restarts") not in (None, "0"), f"NRestarts grew by {fact('s5.restarts')}")
s.need(p and p["ActiveState"] == "active", f"ActiveState={p and p['ActiveState']}")
s.need(lines(read("s5-journal.txt"), r"SEGV"), "no SEGV in the journal")
s.note(f"new process {took} s, active {active_at} s after SIGSEGV")
s.done()

# 6. -------------------------------------------------------------------------------------------
s = Scenario(6, "systemctl reload re-reads the configuration; a bad one is refused, the old kept")
s.need(fact("s6.reload_exit") == "0", f"reload exit {fact('s6.reload_exit')}")
s.need(lines(read("s6a-journal.txt"), r"configuration reloaded"), "no 'configuration reloaded' line")
s.need(fact("s6.pid_kept") == "1", "the reload restarted the process")
s.need(lines(read("s6b-journal.txt"), r"not reloaded"), "the bad configuration was not refused in the journal")
p = show("s6b-show.txt")
s.need(p and p["ActiveState"] == "active", f"after the bad reload ActiveState={p and p['ActiveState']}")
s.need(fact("s6.bad_pid_kept") == "1", "the bad reload restarted the process")
s.need(p and p["StatusText"].startswith("scanning"), f"after the bad reload STATUS={p and p['StatusText']!r}")
s.done()

# 7. -------------------------------------------------------------------------------------------
s = Scenario(7, "systemctl stop: exit 0 within a few seconds")
p = show("s7-show.txt")
took = num("s7.stop_seconds")
s.need(fact("s7.stop_exit") == "0", f"systemctl stop exit {fact('s7.stop_exit')}")
s.need(took is not None and took <= 5, f"stop took {took} s (limit 5 s)")
if s.need(p is not None, "no data"):
    s.need(p["Result"] == "success" and p["ExecMainStatus"] == "0" and p["ActiveState"] == "inactive",
           f"Result={p['Result']} ExecMainStatus={p['ExecMainStatus']} ActiveState={p['ActiveState']}")
s.note(f"stop took {took} s")
s.done()

# 8. -------------------------------------------------------------------------------------------
s = Scenario(8, "adapter removed and re-added: scanning resumes within 5 s")
s.need(fact("s8.scanning_before") == "1", "was not scanning before")
s.need(fact("s8.pid_before") not in (None, "", "0") and fact("s8.pid_after") == fact("s8.pid_before"),
       "the daemon that scanned before the adapter went was not the one scanning after it came back "
       "(MainPID %s, then %s)" % (fact("s8.pid_before"), fact("s8.pid_after")))
s.need(fact("s8.adapter_powered") == "1", "bluetoothd did not power hci0 again")
restart_at, back = num("s8.btvirt_restart_usec"), num("btvirt.last_start_usec")
# The daemon's first "scanning"/"discovery started" line once btvirt was started again
# (short-monotonic timestamps), against the start of the btvirt that made the controllers (an
# upper bound: the controllers and bluetoothd's power-on come after it).
took = None
for line in (read("s8-journal.txt") or "").splitlines():
    m = re.match(r"\[\s*([\d.]+)\]", line)
    if not (m and restart_at and back) or float(m.group(1)) * 1e6 < restart_at:
        continue
    if re.search(r"discovery started|(?<!not )(?<!cannot )\bscanning\b", line):
        took = round(max(0.0, float(m.group(1)) - back / 1e6), 2)
        break
if took is None and fact("s8.stopped_scanning") == "1":
    took = num("s8.seconds_to_resume")  # STATUS= went from not scanning back to scanning: polled
s.need(took is not None and took <= 5, f"scanning resumed {took} s after the adapter was back (limit 5 s)")
s.note(f"resumed {took} s after btvirt started again")
s.done()

# 9. -------------------------------------------------------------------------------------------
s = Scenario(9, "HCI drop-in, backend = hci, bluetoothd stopped: it scans")
p = show("s9-show.txt")
s.need(fact("s9.bluetoothd") in ("inactive", "failed"), f"bluetoothd is {fact('s9.bluetoothd')}")
if s.need(p is not None, "no data"):
    s.need("hci.conf" in p["DropInPaths"], f"DropInPaths={p['DropInPaths']!r}")
    s.need(p["ActiveState"] == "active" and p["StatusText"].startswith("scanning"),
           f"ActiveState={p['ActiveState']} STATUS={p['StatusText']!r}")
took = num("s9.seconds_to_beacon")
s.need(took is not None and took < 40, "the beacon was not in range through raw HCI")
s.note(f"beacon in range {took} s after scanning")
s.done()

# 10. ------------------------------------------------------------------------------------------
s = Scenario(10, "backend = hci without the drop-in: STATUS= and doctor name the drop-in; backs off")
p = show("s10-show.txt")
journal10 = read("s10-journal.txt")
retries = lines(journal10, r"cannot scan")
observed = num("s10.observed_seconds")
if s.need(p is not None, "no data"):
    s.need(p["ActiveState"] == "active", f"ActiveState={p['ActiveState']}")
    s.need(not p["StatusText"].startswith("scanning"), f"STATUS= says scanning: {p['StatusText']!r}")
    s.need(re.search(r"drop-in|hci\.conf", p["StatusText"]), f"STATUS= does not name the drop-in: {p['StatusText']!r}")
s.need(re.search(r"drop-in|hci\.conf", read("s10-doctor.txt") or ""), "doctor does not name the drop-in")
# A doubling delay from 1 s logs at most 5 retries in 20 s (0, 1, 3, 7, 15); one a second is 20.
s.need(len(retries) <= 6, f"{len(retries)} 'cannot scan' lines in {observed} s: no backoff")
s.note(f"{len(retries)} retry lines in {observed} s")
s.done()

# 11. ------------------------------------------------------------------------------------------
s = Scenario(11, "remove keeps the state; reinstall keeps pairings and the outbox; purge removes")
s.need(fact("s11.trip_exit") == "0", f"trip box-2 exit {fact('s11.trip_exit')}")
s.need(fact("s11.remove_exit") == "0", f"apt-get remove exit {fact('s11.remove_exit')}")
s.need(fact("s11.state_kept") == "1", "/var/lib/beaconbridge is gone after remove")
s.need(fact("s11.conf_kept") == "1", "the conffile is gone after remove")
s.need(fact("s11.removed_load_state") == "not-found", f"unit LoadState={fact('s11.removed_load_state')} after remove")
s.need(fact("s11.reinstall_exit") == "0", f"reinstall exit {fact('s11.reinstall_exit')}")
s.need(fact("s11.active_after_reinstall") == "1", "not active after reinstall")
started_cleanly(s, "upgrade", "s11.upgrade_exit", "s11.active_after_upgrade", "s11.upgrade_restarts",
                "s11-upgrade-journal.txt")
started_cleanly(s, "reinstall", "s11.reinstall_exit", "s11.active_after_reinstall", "s11.reinstall_nrestarts",
                "s11-reinstall-journal.txt")


def waiting(name):
    """(undelivered batches, unresolved trips, pairings) from `status --json`: the store's outbox."""
    try:
        status = json.loads(read(name) or "")
    except ValueError:
        return None
    outbox = status.get("outbox") or {}
    return outbox.get("undelivered"), outbox.get("unresolvedTrips"), status.get("pairings")


before, after = waiting("s11-status-before.json"), waiting("s11-status-after.json")
s.need(before is not None and (before[0] or 0) >= 1, f"no batch waiting before remove ({before})")
s.need(before is not None and after is not None and before == after,
       f"(undelivered, unresolved trips, pairings) before {before}, after reinstall {after}")
s.need("VAN-7" in (read("s11-pairs-after.json") or ""), "pairing VAN-7 lost by remove and reinstall")
s.need(fact("s11.purge_exit") == "0", f"purge exit {fact('s11.purge_exit')}")
s.need(fact("s11.purge_state_gone") == "1", "/var/lib/beaconbridge left after purge")
s.need(fact("s11.purge_etc_gone") == "1", "/etc/beaconbridge/beaconbridge.conf left after purge")
s.need(fact("s11.purge_wants_gone") == "1", "the multi-user.target.wants symlink left after purge")
s.need(fact("s11.purge_dpkg") in ("un", "pn", ""), f"dpkg status after purge {fact('s11.purge_dpkg')!r}")
s.note(f"(undelivered, unresolved trips, pairings) {before} -> {after}")
s.done()

# 12. ------------------------------------------------------------------------------------------
s = Scenario(12, "no seccomp denial in the journal over the whole run")
journal = read("journal-all.txt")
if s.need(journal is not None and "s11 end" in (read("steps.txt") or ""), "the run did not finish"):
    denials = lines(journal, r"type=1326|audit.*SECCOMP|Failed to set thread priority|beaconbridge\[\d+\]:.*errno=1\b")
    s.need(not denials, f"{len(denials)} lines, first: {denials[0].strip() if denials else ''}")
s.done()

# Small things a packager would notice (man pages). -----------
s = Scenario(13, "stop logs no 'the scan ended; restarting it'")
j7 = read("s7-journal.txt")
if s.need(j7 is not None, "no data"):
    s.need(not lines(j7, r"scan ended"), "the stop logged 'the scan ended; restarting it'")
s.done()

s = Scenario(14, "no .cache or .local in /var/lib/beaconbridge")
listing = read("s11-state-before.txt")
if s.need(listing is not None, "no data"):
    s.need(not re.search(r" \.(cache|local)$", listing, re.M), "the state directory holds .cache or .local")
s.done()

# Debian's way (dh_installsystemd's postrm, packaging/deb/postrm): remove keeps the enablement
# link with the rest of the administrator's state, so a reinstall comes back enabled; systemd
# ignores it meanwhile; purge removes it.
s = Scenario(15, "apt-get remove: the kept enablement link is inert and a reinstall is enabled; purge removes it")
s.need(fact("s11.removed_load_state") == "not-found", f"LoadState after remove: {fact('s11.removed_load_state')}")
s.need(fact("s11.active_after_reinstall") == "1", "not active after the reinstall")
s.need(fact("s11.purge_wants_gone") == "1", "purge left the multi-user.target.wants link")
s.note(f"link kept after remove: {fact('s11.dangling_wants') == '1'}")
s.done()

s = Scenario(16, "`man beaconbridge` works on the box")
s.need(fact("s1.man_exit") == "0", f"man exit {fact('s1.man_exit')}")
s.done()

s = Scenario(17, "STATUS= stops saying 'scanning' while the adapter is gone")
gone = show("s8-gone-show.txt")
if s.need(gone is not None, "no data"):
    s.need(not gone["StatusText"].startswith("scanning"),
           f"STATUS= with hci0 gone for 20 s and more: {gone['StatusText']!r}")
s.done()

# ------------------------------------------------------------------------------------------------
failed = 0
for r in results:
    verdict = "FAIL" if r.problems else "PASS"
    failed += bool(r.problems)
    detail = "; ".join(r.problems + r.notes)
    print(f"test-box: {verdict} {r.number:2d} {r.title}" + (f"  [{detail}]" if detail else ""))
if last_step != "done":
    print(f"test-box: the guest did not finish; its last step was {last_step!r} (see guest.log)")
print(f"{len(results) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
