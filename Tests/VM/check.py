#!/usr/bin/env python3
"""The VM tier's asserts, on the host, over what Tests/VM/guest.sh left in OUT.

    Tests/VM/check.py OUT BEACONBRIDGE

Prints PASS, FAIL or PENDING per scenario, the tails of the guest's logs after a
failure, and a closing "N passed, N failed" line. Exits 1 when a scenario failed. PENDING
scenarios wait for another issue; they count neither as passed nor as failed.
"""
import json
import re
import os
import subprocess
import sys

OUT, BB = sys.argv[1], sys.argv[2]

# The beacons guest.sh advertises: (uuid as beaconbridge prints it, major, minor).
A = ("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 1, 7)  # hci1, from the start
B = ("74278BDA-B644-4520-8F0C-720EAF059935", 2, 9)  # hci2, from the start
C = ("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 3, 33)  # after bluetoothd restarted
D = ("E2C56DB5-DFFB-48D2-B060-D0F5A71096E0", 4, 44)  # after btvirt restarted
NAMES = {A: "A", B: "B", C: "C", D: "D"}

results = []  # (status, name, detail)
logs_to_show = set()


def path(name):
    return os.path.join(OUT, name)


def read(name):
    try:
        with open(path(name), errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


def entered(lines):
    """The iBeacons of a JSON-lines output's beaconEntered events, in order, and unparsable lines."""
    found, bad = [], []
    for line in lines.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            bad.append(line)
            continue
        if event.get("type") == "beaconEntered" and event.get("kind") == "iBeacon":
            found.append((event.get("uuid"), event.get("major"), event.get("minor")))
    return found, bad


def names(beacons):
    return ", ".join(NAMES.get(b, "%s %s/%s" % b) for b in beacons) or "none"


def exit_status(scan):
    for line in (read("exits.txt") or "").splitlines():
        name, _, status = line.rpartition(" exit ")
        if name == scan:
            return int(status)
    return None


def scan_scenario(title, scan, want, also=None, before=None, restarts=0):
    """A scan scenario: `scan`.jsonl lists every beacon of `want` (and, when given, one of `before`
    entered before any of `want`), the scan started discovery `restarts` more times (its stderr),
    and it ended with status 0 when the guest stopped it."""
    out = read(scan + ".jsonl")
    logs_to_show.update([scan + ".err", "guest.log"])
    if out is None:
        return fail(title, "%s.jsonl is missing: the guest never ran this scan" % scan)
    found, bad = entered(out)
    problems = []
    if bad:
        problems.append("%d lines are not JSON (first: %r)" % (len(bad), bad[0][:120]))
    missing = [b for b in want if b not in found]
    if missing:
        problems.append("never entered: %s" % names(missing))
    if before is not None:
        first_wanted = min((found.index(b) for b in want if b in found), default=len(found))
        if not any(b in found[:first_wanted] for b in before):
            problems.append("no beacon (%s) was seen before the disruption" % names(before))
    starts = (read(scan + ".err") or "").count("discovery started on")
    if restarts and starts < 1 + restarts:
        problems.append("discovery started %d time(s), not %d: it did not resume" % (starts, 1 + restarts))
    status = exit_status(scan)
    if status != 0:
        problems.append("the scan exited with status %s, not 0, when stopped" % status)
    if problems:
        return fail(title, "; ".join(problems) + " (entered: %s)" % names(found))
    return ok(title, "entered: %s" % names(found) + (also or ""))


def ok(title, detail):
    results.append(("PASS", title, detail))


def fail(title, detail):
    results.append(("FAIL", title, detail))


def replay(title, captures):
    """beaconbridge replay CAPTURE --json --adapter hci0 finds every beacon wanted of each capture."""
    details = []
    for capture, want in captures:
        detail = replay_one(capture, want)
        if detail.startswith("FAIL "):
            return fail(title, detail[5:])
        details.append(detail)
    return ok(title, "; ".join(details))


def replay_one(capture, want):
    logs_to_show.update(["btmon.txt"])
    if not os.path.exists(path(capture)):
        return "FAIL %s is missing: btmon -w wrote nothing" % capture
    run = subprocess.run(
        [BB, "replay", path(capture), "--json", "--adapter", "hci0"], capture_output=True, text=True)
    found, bad = entered(run.stdout)
    problems = []
    if run.returncode != 0:
        problems.append("replay exited %d: %s" % (run.returncode, run.stderr.strip()[-300:]))
    if bad:
        problems.append("%d lines are not JSON" % len(bad))
    missing = [b for b in want if b not in found]
    if missing:
        problems.append("the replay never entered %s" % names(missing))
    size = os.path.getsize(path(capture))
    if problems:
        return "FAIL %s: %s (entered: %s)" % (capture, "; ".join(problems), names(found))
    return "%s (%d bytes): entered %s" % (capture, size, names(sorted(set(found), key=found.index)))


def load_json(name):
    text = read(name)
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def tagging_path(title):
    """Scenario 2: s2-*.json from the CLI, s2-backend.jsonl from the fake backend."""
    logs_to_show.update(["s2-daemon.err", "s2-cli.err", "guest.log"])
    if read("s2-daemon.err") is None:
        return fail(title, "the guest never started the daemon")
    problems = []
    status = load_json("s2-status.json") or {}
    active = (status.get("activeBeacon") or {}).get("deviceId")
    if active != "VAN-7":
        problems.append("status never showed VAN-7 active (activeBeacon: %r)" % status.get("activeBeacon"))
    start = load_json("s2-trip-start.json") or {}
    if start.get("deviceId") != "VAN-7":
        problems.append("trip start was tagged %r, not VAN-7" % start.get("deviceId"))
    posts = []
    for line in (read("s2-backend.jsonl") or "").splitlines():
        try:
            posts.append(json.loads(line))
        except ValueError:
            problems.append("the backend log has a line that is not JSON")
    delivered = [p for p in posts if str(p.get("status")) == "200" and isinstance(p.get("body"), dict)]
    if not delivered:
        problems.append("no batch reached the backend (%d requests)" % len(posts))
    for post in delivered:
        body = post["body"]
        if body.get("deviceId") != "VAN-7":
            problems.append("a batch reached the backend tagged %r, not VAN-7" % body.get("deviceId"))
        if body.get("tripId") not in (None, "vm-1"):
            problems.append("a batch of trip %r reached the backend" % body.get("tripId"))
    events = [e for p in delivered for e in (p["body"].get("events") or [])]
    if delivered and not any(e.get("type") == "braking" for e in events if isinstance(e, dict)):
        problems.append("the delivered batch lost the braking event")
    if exit_status("s2-daemon") != 0:
        problems.append("the daemon exited with status %s on SIGTERM, not 0" % exit_status("s2-daemon"))
    if problems:
        return fail(title, "; ".join(problems))
    return ok(title, "VAN-7 active, trip vm-1 tagged VAN-7, %d batch(es) delivered with key %s"
              % (len(delivered), ", ".join(str(p.get("key")) for p in delivered)))


def eid_trip(title):
    """Scenario 8: s8-*.json from `status --json` and `trip start` while the daemon ran with
    [ActiveBeacon] requireAuthenticated."""
    logs_to_show.update(["s8-daemon.err", "s8-cli.err", "s8-pair.txt", "guest.log", "bluetoothd.log"])
    if read("s8-daemon.err") is None:
        return fail(title, "the guest never started the daemon")
    problems = []
    eids = (read("s8-eids.txt") or "").split()
    if len(eids) != 2 or eids[0] == eids[1]:
        problems.append("the oracle gave no two EIDs (%r)" % eids)
    for name in ("status-1", "status-2"):
        active = (load_json("s8-%s.json" % name) or {}).get("activeBeacon") or {}
        if active.get("deviceId") != "VAN-E" or active.get("authentication") != "eid":
            problems.append("%s: the active beacon was %r, not VAN-E by eid" % (name, active))
    heard = load_json("s8-status-clone.json") or {}
    if not any(b.get("minor") == 7 for b in heard.get("beaconsInRange") or []):
        problems.append("the clone (beacon A) was never in range, so the policy was not tried")
    gap = load_json("s8-status-gap.json") or {}
    if gap.get("activeBeacon") is not None:
        problems.append("with only the clone heard, the active beacon was %r" % gap.get("activeBeacon"))
    for n in (1, 2):
        trip = load_json("s8-trip-%d.json" % n) or {}
        if trip.get("deviceId") != "VAN-E" or trip.get("authentication") != "eid":
            problems.append("trip vm-e%d was tagged %r (%r), not VAN-E by eid"
                            % (n, trip.get("deviceId"), trip.get("authentication")))
    if exit_status("s8-daemon") != 0:
        problems.append("the daemon exited with status %s on SIGTERM, not 0" % exit_status("s8-daemon"))
    if problems:
        return fail(title, "; ".join(problems))
    return ok(title, "EIDs %s then %s resolved to VAN-E; trips vm-e1 and vm-e2 tagged VAN-E (eid); the clone in "
              "range was never active" % (eids[0], eids[1]))


def eid_over_hci(title):
    """Scenario 9: s9-hci.jsonl from `scan --backend hci` over scenario 8's store."""
    out = read("s9-hci.jsonl")
    logs_to_show.update(["s9-hci.err", "guest.log"])
    if out is None:
        return fail(title, "s9-hci.jsonl is missing: the guest never ran this scan")
    events = []
    for line in out.splitlines():
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except ValueError:
            return fail(title, "a line is not JSON: %r" % line[:120])
    entered = [e for e in events if e.get("type") == "beaconEntered"]
    by_key = [e for e in entered if e.get("authentication") == "eid"]
    problems = []
    if not by_key:
        problems.append("no beacon entered by eid (entered: %r)" % [e.get("authentication") for e in entered])
    if exit_status("s9-hci") != 0:
        problems.append("the scan exited with status %s, not 0, when stopped" % exit_status("s9-hci"))
    if problems:
        return fail(title, "; ".join(problems))
    return ok(title, "%d beaconEntered line(s) by eid of %d" % (len(by_key), len(entered)))


# The Core specification's sample IRK (Vol 3 Part H, 2.2.2), as the guest gives it to the kernel.
IRK = "ec0234a357c8ad05341010a60a397d9b"


def rpa_trip(title):
    """Scenario 10: s10-*.json from `status --json` and `trip start` while the daemon ran, paired
    by IRK only, with requireAuthenticated."""
    logs_to_show.update(["s10-daemon.err", "s10-cli.err", "s10-pair.txt", "s10-hci2-info.txt", "guest.log",
                         "bluetoothd.log"])
    if read("s10-daemon.err") is None:
        return fail(title, "the guest never started the daemon")
    problems = []
    status = load_json("s10-status.json") or {}
    active = status.get("activeBeacon") or {}
    if active.get("deviceId") != "VAN-R" or active.get("authentication") != "rpa":
        problems.append("the active beacon was %r, not VAN-R by rpa" % active)
    heard = [b for b in status.get("beaconsInRange") or [] if b.get("authentication") == "rpa"]
    address = (heard[0].get("address") if heard else None) or ""
    # A resolvable private address (its two most significant bits 01) whose hash the oracle,
    # written from the specification, computes from the IRK and the address's prand.
    if not re.match(r"^[4-7][0-9A-F](:[0-9A-F]{2}){5}$", address):
        problems.append("the beacon's address %r is not a resolvable private address" % address)
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Crypto"))
        import oracle
        octets = bytes.fromhex(address.replace(":", ""))
        if oracle.ah(bytes.fromhex(IRK), octets[:3]) != octets[3:]:
            problems.append("the oracle's ah(IRK, prand) of %s is not its hash" % address)
    trip = load_json("s10-trip.json") or {}
    if trip.get("deviceId") != "VAN-R" or trip.get("authentication") != "rpa":
        problems.append("trip vm-r1 was tagged %r (%r), not VAN-R by rpa" % (trip.get("deviceId"), trip.get("authentication")))
    if exit_status("s10-daemon") != 0:
        problems.append("the daemon exited with status %s on SIGTERM, not 0" % exit_status("s10-daemon"))
    if problems:
        return fail(title, "; ".join(problems))
    return ok(title, "the kernel's address %s (its hash checked by the oracle) resolved to VAN-R; trip vm-r1 "
              "tagged VAN-R (rpa)" % address)


def provisioned_trip(title):
    """Scenario 11: `provision` against hci1's Eddystone Configuration Service (served through
    bluetoothd's GATT server by Tests/VM/eddystone_peripheral.py, computing with the oracle): a
    wrong lock key and a refused registration pair nothing; the third run pairs the beacon, and
    the daemon tags a trip with its EID (authentication eid). No output holds the lock key."""
    logs_to_show.update(["s11-wrong.err", "s11-refused.err", "s11-good.err", "s11-peripheral.txt",
                         "s11-peripheral.log", "s11-daemon.err", "s11-cli.err", "s11-device.txt", "guest.log",
                         "bluetoothd.log"])
    if read("s11-peripheral.txt") is None:
        return fail(title, "the guest never started the peripheral")
    problems = []
    if exit_status("s11-wrong") != 1 or "unlocking: the beacon refused the unlock token" not in (read("s11-wrong.err") or ""):
        problems.append("a wrong lock key: exit %s, %r" % (exit_status("s11-wrong"), read("s11-wrong.err")))
    if exit_status("s11-refused") != 1 or "writing the EID registration" not in (read("s11-refused.err") or ""):
        problems.append("a refused registration: exit %s, %r" % (exit_status("s11-refused"), read("s11-refused.err")))
    # Nothing stored: no store at all, or one without the pairing.
    before = read("s11-pairs-before.json") or ""
    if "VAN-P" in before or (load_json("s11-pairs-before.json") is None and "holds no store" not in before):
        problems.append("after the two failures pairs said %r, not that nothing was paired" % before)
    if exit_status("s11-good") != 0:
        problems.append("provision exited %s: %r" % (exit_status("s11-good"), read("s11-good.err")))
    good = load_json("s11-good.json") or {}
    if (good.get("pairing") or {}).get("deviceId") != "VAN-P" or good.get("method") != "key exchange":
        problems.append("provision printed %r" % good)
    if "VAN-P" not in json.dumps(load_json("s11-pairs.json")):
        problems.append("pairs does not list VAN-P: %r" % read("s11-pairs.json"))
    said = read("s11-peripheral.txt") or ""
    if "registered 10" not in said or "advertising EID" not in said:
        problems.append("the peripheral said %r" % said)
    status = load_json("s11-status.json") or {}
    active = status.get("activeBeacon") or {}
    if active.get("deviceId") != "VAN-P" or active.get("authentication") != "eid":
        problems.append("the active beacon was %r, not VAN-P by eid" % active)
    trip = load_json("s11-trip.json") or {}
    if trip.get("deviceId") != "VAN-P" or trip.get("authentication") != "eid":
        problems.append("trip vm-p1 was tagged %r (%r), not VAN-P by eid" % (trip.get("deviceId"), trip.get("authentication")))
    if exit_status("s11-daemon") != 0:
        problems.append("the daemon exited with status %s on SIGTERM, not 0" % exit_status("s11-daemon"))
    key = (read("s11-lock-key.txt") or "").strip().lower()
    outputs = "".join(read(n) or "" for n in ["s11-wrong.json", "s11-wrong.err", "s11-refused.json", "s11-refused.err",
                                              "s11-good.json", "s11-good.err", "s11-pairs.json", "s11-daemon.err",
                                              "s11-cli.err"])
    if not key or key in outputs.lower():
        problems.append("an output holds the lock key")
    if problems:
        return fail(title, "; ".join(problems))
    return ok(title, "a wrong lock key and a refused registration paired nothing; %s provisioned in slot %s, "
              "paired as VAN-P; trip vm-p1 tagged VAN-P (eid)" % (good.get("address"), good.get("slot")))


def beacon_health(title):
    """Scenario 7: s7-status.json from `status --json` while the daemon ran."""
    logs_to_show.update(["s7-daemon.err", "s7-cli.err", "guest.log", "bluetoothd.log"])
    if read("s7-daemon.err") is None:
        return fail(title, "the guest never started the daemon")
    status = load_json("s7-status.json") or {}
    paired = [b for b in status.get("pairedBeacons") or [] if b.get("deviceId") == "VAN-5"]
    if not paired:
        return fail(title, "status never listed VAN-5 among pairedBeacons (%r)" % status.get("pairedBeacons"))
    b = paired[0]
    want = {"kind": "iBeacon", "major": 5, "minor": 55, "batteryMv": 2900, "temperatureC": 23.5,
            "advertisingCount": 4660, "uptimeSeconds": 360}
    problems = ["%s is %r, not %r" % (k, b.get(k), v) for k, v in want.items() if b.get(k) != v]
    if exit_status("s7-daemon") != 0:
        problems.append("the daemon exited with status %s on SIGTERM, not 0" % exit_status("s7-daemon"))
    if problems:
        return fail(title, "; ".join(problems))
    telemetry = [line for line in (read("s7-scan.jsonl") or "").splitlines() if '"type":"telemetry"' in line]
    return ok(title, "VAN-5: battery %s mV, %s C, uptime %s s, %s adverts; scan printed %d telemetry line(s)"
              % (b["batteryMv"], b["temperatureC"], b["uptimeSeconds"], b["advertisingCount"], len(telemetry)))


failed_logs = set()


def scenario(check, *args, **kwargs):
    """Runs one scenario's check; the logs it names are shown only if it failed."""
    count = len(results)
    check(*args, **kwargs)
    if any(r[0] == "FAIL" for r in results[count:]):
        failed_logs.update(logs_to_show)
    logs_to_show.clear()


steps = read("steps.txt")
if steps is None:
    print("FAIL  the guest never ran Tests/VM/guest.sh (no steps.txt in %s)" % OUT)
    failed_logs.update(["vng.log"])
    results.append(("FAIL", "guest", "no output"))
else:
    for line in steps.splitlines():
        if line.startswith("SETUP-FAIL"):
            results.append(("FAIL", "setup", line[len("SETUP-FAIL "):]))
            failed_logs.update(["guest.log", "bluetoothd.log", "btvirt.log", "dmesg.txt"])
    if "done" not in steps.splitlines():
        results.append(("FAIL", "guest", "the guest script did not finish (last step: %s)"
                        % (steps.splitlines() or ["none"])[-1]))
        failed_logs.update(["guest.log", "vng.log"])

    scenario(scan_scenario, "1 scan through BlueZ lists both advertised iBeacons", "s1-bluez", [A, B])
    scenario(tagging_path, "2 the tagging path: the daemon runs, pair binds A to VAN-7 (B not), the trip is tagged VAN-7 "
             "and its batch reaches the fake backend")
    scenario(scan_scenario, "3 bluetoothd killed and restarted mid-scan: the scan resumes and sees a beacon "
             "advertised after the restart", "s3-restart", [C], before=[A, B], restarts=1)
    scenario(scan_scenario, "4 controllers gone and back (btvirt restarted): the scan resumes and sees a beacon "
             "on the new controllers", "s4-controller", [D], restarts=1)
    scenario(scan_scenario, "5 bluetoothd stopped: the raw HCI backend sees both iBeacons", "s5-hci", [A, B])
    scenario(replay, "6 btmon -w captured the run: replay finds A, B, C and D in it, and A and B in scenario 1's "
             "short capture (the test fixture's source)", [("capture.btsnoop", [A, B, C, D]), ("s1.btsnoop", [A, B])])

    scenario(beacon_health, "7 one controller advertises an iBeacon and an Eddystone-TLM: through bluetoothd the daemon "
             "joins them by address and status shows the paired beacon's battery")

    scenario(eid_trip, "8 an Eddystone-EID beacon through bluetoothd tags the trip (authentication eid) beside a paired "
             "plain iBeacon that the policy keeps from becoming active, and again after it rotates to its next EID")
    scenario(eid_over_hci, "9 the same EID beacon through the raw HCI backend, bluetoothd stopped: scan resolves it by "
             "key (authentication eid)")
    scenario(rpa_trip, "10 a beacon advertising from the kernel's resolvable private addresses (privacy on, the Core "
             "spec's sample IRK), through bluetoothd: paired by IRK alone, it tags the trip (authentication rpa)")
    scenario(provisioned_trip, "11 provision registers an Eddystone-EID beacon (hci1, bluetoothd's GATT server) through the "
             "real bluetoothd and pairs it; a trip is tagged with it (authentication eid)")

for status, title, detail in results:
    print("%-7s %s: %s" % (status, title, detail))

failed = sum(1 for r in results if r[0] == "FAIL")
passed = sum(1 for r in results if r[0] == "PASS")
if failed:
    for name in sorted(failed_logs):
        text = read(name)
        if text is None:
            continue
        tail = text.splitlines()[-25:]
        print("\n--- tail of %s (%s) ---" % (name, path(name)))
        print("\n".join(tail))
print()
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
