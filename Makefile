# beaconbridge: the two commands a user needs are `make demo` and `make test`.
SHELL := /bin/bash
SWIFT ?= swift
# Warnings fail the build: the project builds clean.
SWIFTFLAGS ?= -Xswiftc -warnings-as-errors
BIN := .build/debug/beaconbridge

.PHONY: all build demo test test-unit test-process check check-help lint format scenarios fuzz fuzz-short \
  leakcheck clean help

all: build ## the same as make build

# Every target with a `## ` comment on its rule line; `make check-help` fails on a target without
# one, so this list cannot drift from the rules.
help: ## list every target with what it does
	@awk -F ':.*## ' '/^[a-z][a-z0-9-]*:.*## / { printf "  make %-20s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

check-help: ## fail when a target has no description for make help
	@missing=$$(grep -E '^[a-z][a-z0-9-]*:([^=]|$$)' $(MAKEFILE_LIST) | grep -v ' ## ' | cut -d: -f1); \
	  if [ -n "$$missing" ]; then echo "Makefile: no '## ' description for make help on: $$missing" >&2; exit 1; fi

# beaconbridged is the daemon's own executable, which `beaconbridge run` execs (next to it here).
build: ## build the debug binaries (.build/debug/beaconbridge and beaconbridged)
	@scripts/install-deps.sh build
	$(SWIFT) build $(SWIFTFLAGS) --product beaconbridge
	$(SWIFT) build $(SWIFTFLAGS) --product beaconbridged

demo: build ## build, then play the scripted drive through the real pipeline (no Bluetooth needed)
	$(BIN) demo

# Every tier the README promises. A tier that cannot run fails here; none is skipped.
test: check-help lint scenarios crypto-vectors test-golden fuzz-short fuzz-hci-short fuzz-input-short test-io test-hostile leakcheck bench-check bench-scaling test-unit test-process test-system-files test-vm test-box test-arm64 ## every test tier (the VM, box and arm64 tiers included)
	@# A tier skipped by BEACONBRIDGE_SKIP_VM or BEACONBRIDGE_SKIP_BOX is not a pass.
	@skipped=$$(cat .build/skipped-vm .build/skipped-box 2>/dev/null | tr '\n' ' '); \
	if [ -n "$$skipped" ]; then \
	  echo "make test: the other tiers passed, but these were SKIPPED and did not run: $$skipped" >&2; exit 1; fi
	@echo "make test: all tiers passed"

# The tiers are Swift Testing tags (Sources/BeaconTestSupport/Tiers.swift): a suite tagged
# `.process` runs the daemon as users run it, or measures a time, and runs one at a time after the
# rest, so that a two-core machine does not starve its timing. `swift test` (6.3) filters by
# name only, so scripts/test-tiers.sh reads the tags from Tests/ and turns them into a suite list.
test-unit: ## the unit tests: every suite not tagged .process, in parallel
	@scripts/install-deps.sh build
	@scripts/install-deps.sh test
	$(SWIFT) build $(SWIFTFLAGS) --build-tests
	process=$$(scripts/test-tiers.sh process) && $(SWIFT) test $(SWIFTFLAGS) --skip-build --skip "$$process"

test-process: ## the suites tagged .process (the daemon as a process, or timed), one at a time
	@scripts/install-deps.sh build
	@scripts/install-deps.sh test
	$(SWIFT) build $(SWIFTFLAGS) --build-tests
	process=$$(scripts/test-tiers.sh process) && \
	  $(SWIFT) test $(SWIFTFLAGS) --skip-build --filter "$$process" --no-parallel

# The fast gate before a commit: the format, the build with warnings as errors (tests included),
# the Makefile's help, and the unit tier. No process, VM or box tier.
check: check-help lint test-unit ## format lint, build with warnings as errors, unit tests: a few minutes
	@echo "make check: passed"

lint: ## check the format (swift format lint --strict)
	$(SWIFT) format lint --strict --recursive Sources Tests

format: ## format the sources in place (swift format)
	$(SWIFT) format --in-place --recursive Sources Tests

# Every event output of the CLI (simulate on each scenario, replay of Tests/Golden's capture) byte
# for byte against Tests/Golden/cli; the daemon's outputs are golden-tested in BridgeDaemonTests
# (GoldenOutputTests). `scripts/check-golden.py BIN --update` rewrites them.
.PHONY: test-golden
test-golden: build ## the CLI's event outputs byte for byte against Tests/Golden
	@scripts/install-deps.sh test
	scripts/check-golden.py $(BIN)

# The scenario files are generated; fail if they are stale.
scenarios: ## fail when Tests/Scenarios/*.json differ from what generate.py writes
	@scripts/install-deps.sh test
	@tmp=$$(mktemp -d) && /usr/bin/python3 Tests/Scenarios/generate.py "$$tmp" && \
	  for f in "$$tmp"/*.json; do \
	    cmp -s "$$f" "Tests/Scenarios/$$(basename "$$f")" || { echo "Tests/Scenarios/$$(basename "$$f") is stale: run 'python3 Tests/Scenarios/generate.py' and commit" >&2; rm -rf "$$tmp"; exit 1; }; \
	  done; rm -rf "$$tmp"

# libFuzzer with AddressSanitizer over the frame parsers. `make fuzz FUZZ_SECONDS=600` for a
# long run; `make test` runs a short one. A crash fails the target and leaves its input in
# .build/fuzz/frame-parser/artifacts.
FUZZ_SECONDS ?= 60
fuzz: ## fuzz the frame parsers for FUZZ_SECONDS (libFuzzer, AddressSanitizer)
	@scripts/install-deps.sh test
	Fuzz/run.sh $(FUZZ_SECONDS) frame-parser

fuzz-short: ## fuzz the frame parsers for 15 s
	@scripts/install-deps.sh test
	Fuzz/run.sh 15 frame-parser

# LeakSanitizer over the D-Bus and BlueZ tests: fails on any leak through libdbus-1 or our
# DBus/BlueZ modules (valgrind cannot run Swift async code here; see the script).
leakcheck: ## LeakSanitizer over the D-Bus and BlueZ tests
	@scripts/install-deps.sh test
	scripts/leakcheck.sh

# The crash test for longer: SIGKILL the daemon at KILL_POINTS random moments while batches
# stream in (make test runs 60), then check nothing acknowledged was lost or duplicated.
KILL_POINTS ?= 500
.PHONY: soak
soak: ## the crash test with KILL_POINTS SIGKILLs (make test runs 60)
	@scripts/install-deps.sh test
	$(SWIFT) build $(SWIFTFLAGS) --build-tests
	BEACONBRIDGE_KILL_POINTS=$(KILL_POINTS) $(SWIFT) test $(SWIFTFLAGS) --skip-build --filter CrashTests

# Power cuts, not SIGKILLs (docs/reliability.md): the daemon's writes and syncs are logged by an
# LD_PRELOAD library and the state directory is rebuilt as a disk would hold it after a cut at a
# random moment, CUTS times (make test runs 60 in test-process).
CUTS ?= 1000
.PHONY: powercut
powercut: ## cut the power under the daemon CUTS times a test (default 1000): nothing acknowledged lost
	@scripts/install-deps.sh build
	@scripts/install-deps.sh test
	$(SWIFT) build $(SWIFTFLAGS) --build-tests
	BEACONBRIDGE_POWER_CUTS=$(CUTS) $(SWIFT) test $(SWIFTFLAGS) --skip-build --filter PowerCutTests --no-parallel

# Every fuzz target to FUZZ_LONG_RUNS executions or FUZZ_LONG_SECONDS each, two at a time, corpora
# kept under .build/fuzz between runs; one line per target (docs/reliability.md).
.PHONY: fuzz-long
fuzz-long: ## every fuzz target to 10 M executions (FUZZ_LONG_RUNS, FUZZ_LONG_SECONDS), corpora kept
	@scripts/install-deps.sh test
	Fuzz/long.sh

clean: ## remove .build and .build-asan
	rm -rf .build .build-asan

# --- HCI parsers under libFuzzer -----------------------------------------------------------------
# `make fuzz-hci` fuzzes the HCI event parser, the btsnoop reader, the D-Bus wire reader
# (SignalSocket), the Device1 update reader and the checks on the daemon's D-Bus method
# arguments (BridgeRequest.parse) and the Eddystone-EID and encrypted TLM frame readers
# (BeaconCrypto) for FUZZ_HCI_SECONDS each;
# `make test` runs them briefly (FUZZ_HCI_TEST_SECONDS). Crashers go into Fuzz/<target>/corpus,
# which the unit tests replay as regression inputs (Fuzz/run.sh runs every target the same way).
FUZZ_HCI_SECONDS ?= 60
FUZZ_HCI_TEST_SECONDS ?= 10
FUZZ_HCI_TARGETS := hci-events btsnoop dbus-wire device-update bridge-methods eid-frames gatt-replies
.PHONY: fuzz-hci fuzz-hci-short

fuzz-hci: ## fuzz the HCI event parser, the btsnoop reader, the D-Bus wire reader, method arguments, EID frames and the EID provisioner's GATT replies
	@scripts/install-deps.sh test
	Fuzz/run.sh $(FUZZ_HCI_SECONDS) $(FUZZ_HCI_TARGETS)

fuzz-hci-short: ## the same, FUZZ_HCI_TEST_SECONDS each
	@scripts/install-deps.sh test
	Fuzz/run.sh $(FUZZ_HCI_TEST_SECONDS) $(FUZZ_HCI_TARGETS)

# --- System files, installation and the .deb ----------------------------------------------------
# `make install DESTDIR=… PREFIX=/usr` installs the release binary (Swift runtime linked in), the
# unit, the udev rule, the sysusers.d entry, the D-Bus policy, the HCI drop-in (as a file to copy)
# and the commented default configuration (never over an existing one). Without DESTDIR it also
# creates the user and reloads udev and systemd, as the .deb's postinst does.
# It also installs the man pages beaconbridge(1), beaconbridge.conf(5), beaconbridge-dbus(7) and
# the bash, zsh and fish completions.
# `make deb` builds build/beaconbridge_<version>_<arch>.deb with dpkg-deb, then runs lintian:
# an error or a warning fails it.
# `make test-system-files` checks all of it (scripts/check-system-files.sh).
PREFIX ?= /usr
SYSCONFDIR ?= /etc
BINDIR = $(PREFIX)/bin
# The daemon's executable, which `beaconbridge run` looks for in ../lib/beaconbridge of its own.
DAEMONDIR = $(PREFIX)/lib/beaconbridge
UNITDIR = $(PREFIX)/lib/systemd/system
UDEVRULESDIR = $(PREFIX)/lib/udev/rules.d
SYSUSERSDIR = $(PREFIX)/lib/sysusers.d
DBUSPOLICYDIR = $(PREFIX)/share/dbus-1/system.d
PKGDATADIR = $(PREFIX)/share/beaconbridge
MANDIR = $(PREFIX)/share/man
BASHCOMPDIR = $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR = $(PREFIX)/share/zsh/vendor-completions
FISHCOMPDIR = $(PREFIX)/share/fish/vendor_completions.d
RELEASE_BIN := .build/release/beaconbridge
RELEASE_DAEMON := .build/release/beaconbridged
# install-files for another CPU (make deb-arm64): its strip, and what runs its binary (an emulator)
# for the man page and the completions.
STRIP ?= strip
RUN ?=
VERSION := $(shell sed -n 's/.*static let version = "\(.*\)".*/\1/p' Sources/BridgeDaemon/Service/Daemon.swift)
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB := build/beaconbridge_$(VERSION)_$(DEB_ARCH).deb
.PHONY: release release-build check-link-profile install install-files deb test-system-files

# The release build, as shipped. Debug builds and the package's library targets carry none of it.
# --static-swift-stdlib: the binaries need no /opt/swift on the box.
# -function-sections: every function in a section of its own, so that the linker can lay out the
# functions the daemon runs side by side and the kernel maps fewer code pages
# (docs/PERFORMANCE.md, "Where the daemon's memory goes"). -L: libstdc++ linked statically,
# through the linker script packaging/link/libstdc++.so that `-lstdc++` finds first on this path
# (a swiftc -L, which comes before the compiler's own library paths; an -Xlinker -L would come
# after them and find the shared libstdc++). -Xswiftc flags reach every compile command, so both
# binaries get the same ones (lld and static libstdc++ for the CLI too) and the modules are
# compiled once for both.
LINK_DIR := $(CURDIR)/packaging/link
RELEASE_SWIFT := $(SWIFT) build -c release --static-swift-stdlib \
  -Xswiftc -Xfrontend -Xswiftc -function-sections -Xswiftc -use-ld=lld -Xswiftc -L$(LINK_DIR)
# The daemon's link alone (-Xlinker flags reach only the link): the functions `make code-order`
# saw it run laid out first (packaging/link/hot-functions.txt), no symbol exported, relative
# relocations packed.
DAEMON_LINK := -Xlinker --symbol-ordering-file=$(LINK_DIR)/hot-functions.txt \
  -Xlinker --no-export-dynamic -Xlinker -z -Xlinker pack-relative-relocs
# The daemon's release link, which make code-order repeats once it has rewritten the list.
RELEASE_DAEMON_BUILD := $(RELEASE_SWIFT) $(DAEMON_LINK) --product beaconbridged

# The two release binaries, without the profile check (make code-order builds from a stale list).
# make bench and make code-order build them through this rule too.
release-build: ## build the release binaries without checking the link profile
	@scripts/install-deps.sh build
	@scripts/install-deps.sh release
	$(RELEASE_SWIFT) --product beaconbridge
	$(RELEASE_DAEMON_BUILD)

release: release-build check-link-profile ## build the release binaries as shipped (.build/release)

# A stale layout list is not silently skipped: under 90% of its functions in the daemon, or not
# laid out first, fails here with what to do (Benchmarks/code-order.py --check).
check-link-profile: ## fail when packaging/link/hot-functions.txt is stale or was not applied
	@test -x $(RELEASE_DAEMON) || { echo "no $(RELEASE_DAEMON): run make release" >&2; exit 1; }
	/usr/bin/python3 Benchmarks/code-order.py --check $(RELEASE_DAEMON)

install: release install-files ## install the release build under DESTDIR and PREFIX
	@if [ -z "$(DESTDIR)" ]; then \
	  systemd-sysusers beaconbridge.conf; \
	  udevadm control --reload-rules 2>/dev/null || true; \
	  if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi; \
	  echo "installed; start it with: systemctl enable --now beaconbridge"; \
	fi

# The files alone, from an existing release build (the .deb uses this too).
install-files: ## install the files of an existing release build (the .deb uses this)
	@test -x $(RELEASE_BIN) || { echo "no $(RELEASE_BIN): run make release" >&2; exit 1; }
	@test -x $(RELEASE_DAEMON) || { echo "no $(RELEASE_DAEMON): run make release" >&2; exit 1; }
	install -D -m 0755 $(RELEASE_BIN) $(DESTDIR)$(BINDIR)/beaconbridge
	$(STRIP) --remove-section=.comment --remove-section=.note $(DESTDIR)$(BINDIR)/beaconbridge
	install -D -m 0755 $(RELEASE_DAEMON) $(DESTDIR)$(DAEMONDIR)/beaconbridged
	$(STRIP) --remove-section=.comment --remove-section=.note $(DESTDIR)$(DAEMONDIR)/beaconbridged
	install -d -m 0755 $(DESTDIR)$(UNITDIR)
	sed 's|/usr/bin/beaconbridge|$(BINDIR)/beaconbridge|' systemd/beaconbridge.service \
	  > $(DESTDIR)$(UNITDIR)/beaconbridge.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/beaconbridge.service
	install -D -m 0644 udev/90-beaconbridge.rules $(DESTDIR)$(UDEVRULESDIR)/90-beaconbridge.rules
	install -D -m 0644 systemd/beaconbridge.sysusers $(DESTDIR)$(SYSUSERSDIR)/beaconbridge.conf
	install -D -m 0644 dbus/org.beaconbridge.conf $(DESTDIR)$(DBUSPOLICYDIR)/org.beaconbridge.conf
	install -D -m 0644 systemd/beaconbridge-hci.conf $(DESTDIR)$(PKGDATADIR)/beaconbridge-hci.conf
	install -D -m 0644 etc/beaconbridge.conf $(DESTDIR)$(PKGDATADIR)/beaconbridge.conf.default
	@# The man pages (gzip -9n, as dh_compress) and completions: beaconbridge(1) and the
	@# completions from the binary's command table, the others from their Markdown.
	install -d -m 0755 $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 \
	  $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	set -o pipefail; $(RUN) $(RELEASE_BIN) help --man | gzip -9n >$(DESTDIR)$(MANDIR)/man1/beaconbridge.1.gz
	set -o pipefail; /usr/bin/python3 scripts/md2man.py man/beaconbridge.conf.5.md beaconbridge.conf 5 \
	  "beaconbridge $(VERSION)" "configuration of the beaconbridge daemon" | gzip -9n \
	  >$(DESTDIR)$(MANDIR)/man5/beaconbridge.conf.5.gz
	set -o pipefail; /usr/bin/python3 scripts/md2man.py docs/dbus-api.md beaconbridge-dbus 7 \
	  "beaconbridge $(VERSION)" "the beaconbridge daemon's D-Bus API" | gzip -9n \
	  >$(DESTDIR)$(MANDIR)/man7/beaconbridge-dbus.7.gz
	$(RUN) $(RELEASE_BIN) help --completion bash >$(DESTDIR)$(BASHCOMPDIR)/beaconbridge
	$(RUN) $(RELEASE_BIN) help --completion zsh >$(DESTDIR)$(ZSHCOMPDIR)/_beaconbridge
	$(RUN) $(RELEASE_BIN) help --completion fish >$(DESTDIR)$(FISHCOMPDIR)/beaconbridge.fish
	chmod 0644 $(DESTDIR)$(MANDIR)/man?/beaconbridge*.gz $(DESTDIR)$(BASHCOMPDIR)/beaconbridge \
	  $(DESTDIR)$(ZSHCOMPDIR)/_beaconbridge $(DESTDIR)$(FISHCOMPDIR)/beaconbridge.fish
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/beaconbridge/beaconbridge.conf ]; then \
	  echo "keeping $(DESTDIR)$(SYSCONFDIR)/beaconbridge/beaconbridge.conf (the default is in $(PKGDATADIR))"; \
	else \
	  install -D -m 0644 etc/beaconbridge.conf $(DESTDIR)$(SYSCONFDIR)/beaconbridge/beaconbridge.conf; \
	fi

deb: release ## build build/beaconbridge_<version>_<arch>.deb and lintian it
	@scripts/install-deps.sh package
	scripts/build-deb.sh $(VERSION) $(DEB_ARCH) $(DEB)

test-system-files: release ## check the unit, udev rule, policy, man pages, make install and the .deb
	@scripts/install-deps.sh system
	@scripts/install-deps.sh package
	scripts/check-system-files.sh

# --- The VM tier (docs/DESIGN.md, "Tests": tier 4) ----------------------------------------------
# `make test-vm` boots one VM (virtme-ng, qemu under TCG, Debian's kernel) with hci_vhci, btvirt
# and bluetoothd, runs beaconbridge's scenarios in it (Tests/VM/guest.sh) and checks its outputs
# (Tests/VM/check.py). Takes about 6 minutes; logs in .build/vm-out. BEACONBRIDGE_SKIP_VM=1 skips
# it, loudly, on machines that cannot run a VM (see README), and make test then fails; CI never
# sets it.
.PHONY: test-vm

test-vm: build ## the real Linux Bluetooth stack in a VM (virtme-ng, btvirt, bluetoothd)
	scripts/test-vm.sh

# --- arm64 (docs/arm64.md) -----------------------------------------------------------------------
# `make deb-arm64` cross-builds the release binaries for arm64 with Debian's own Swift (sid's
# swiftlang, pinned in scripts/arm64-pins.txt) in an amd64 sid chroot against a trixie arm64 tree
# (scripts/arm64.sh; both cached in /var/cache/beaconbridge-arm64, keyed by their pins), and
# packages them as `make deb` does. `make test-arm64` runs under qemu-aarch64 the package's demo,
# the golden outputs, its daemon as on a box (private bus, dbusmock's BlueZ, the fake backend) and
# the unit tier, cross-built (scripts/test-arm64.sh); `make test-arm64-unit` the unit tier alone.
# binfmt_misc is never registered.
ARM64 := scripts/arm64.sh
ARM64_DEB := build/beaconbridge_$(VERSION)_arm64.deb
ARM64_RELEASE_SWIFT := $(ARM64) swift build -c release --static-swift-stdlib \
  -Xswiftc -Xfrontend -Xswiftc -function-sections -Xswiftc -use-ld=lld -Xswiftc -L$(LINK_DIR)
.PHONY: deb-arm64 test-arm64 test-arm64-unit test-arm64-process

deb-arm64: ## cross-build build/beaconbridge_<version>_arm64.deb (Debian's Swift, no Swift runtime on the box)
	@scripts/install-deps.sh arm64
	@scripts/install-deps.sh package
	$(ARM64) env
	$(ARM64_RELEASE_SWIFT) --product beaconbridge
	@# The layout list is amd64's (make code-order profiles there): the functions lld does not find
	@# in the arm64 daemon are left where they are, without a warning for each.
	$(ARM64_RELEASE_SWIFT) $(DAEMON_LINK) -Xlinker --no-warn-symbol-ordering --product beaconbridged
	@eval "$$($(ARM64) paths)" && release=$$BUILD/aarch64-unknown-linux-gnu/release && \
	  DEB_TREE=$$TREE STRIP=aarch64-linux-gnu-strip RUN="$(CURDIR)/$(ARM64) run" \
	  DEB_INSTALL_ARGS="RELEASE_BIN=$$release/beaconbridge RELEASE_DAEMON=$$release/beaconbridged" \
	  scripts/build-deb.sh $(VERSION) arm64 $(ARM64_DEB)

test-arm64: build deb-arm64 ## under qemu-aarch64: the arm64 .deb's demo, golden outputs and daemon on a box; the unit tier
	@scripts/install-deps.sh test
	scripts/test-arm64.sh $(ARM64_DEB) $(BIN)
	scripts/test-arm64.sh --unit

# One test at a time (--no-parallel): docs/arm64.md, "The unit tier under qemu".
test-arm64-unit: ## the unit tier alone, cross-built for arm64, under qemu-aarch64 (in make test-arm64)
	@scripts/install-deps.sh arm64
	@scripts/install-deps.sh test
	scripts/test-arm64.sh --unit

# Not in make test: docs/arm64.md, "The process tier under qemu", says why.
test-arm64-process: ## the process tier, cross-built for arm64, under qemu-aarch64 (not in make test)
	@scripts/install-deps.sh arm64
	@scripts/install-deps.sh test
	scripts/test-arm64.sh --process

# --- Benchmarks: `make test` runs none of it -----------------------------------------------------
# `make bench` installs what it needs (Debian packages; bleak in .build/bench-venv), builds release,
# runs every measurement side by side, prints one table and writes docs/PERFORMANCE.md.
# BENCH_REPEATS=N repeats each measurement; BENCH_ARGS passes more options to Benchmarks/run.py.
BENCH_REPEATS ?= 3
BENCH_ARGS ?=
BENCH_VENV := .build/bench-venv
# The C programs beside the benchmarks (Benchmarks/emitter.c, the fake bluetoothd stream, and
# Benchmarks/floor.c), each built from its source by the one rule below.
BENCH_EMITTER := .build/bench/bench-emitter
BENCH_FLOOR := .build/bench/bench-floor
.PHONY: bench

.build/bench/bench-%: Benchmarks/%.c
	@scripts/install-deps.sh build
	@scripts/install-deps.sh bench
	@mkdir -p $(@D)
	cc -O2 -Wall -Wextra -Werror -o $@ $< $$(pkg-config --cflags --libs dbus-1)

# The release binaries as `make release` builds them (the Swift runtime linked in): the shared
# runtime's pages count in RSS too, about 6 MB more, so the daemon's memory is measured on what
# is shipped.
bench: release-build $(BENCH_EMITTER) $(BENCH_FLOOR) ## measure against bleak and the C floor; rewrites docs/PERFORMANCE.md
	@scripts/install-deps.sh build
	@scripts/install-deps.sh bench
	@test -x $(BENCH_VENV)/bin/python || /usr/bin/python3 -m venv $(BENCH_VENV)
	@$(BENCH_VENV)/bin/python -c "import bleak" 2>/dev/null || $(BENCH_VENV)/bin/pip install -q bleak
	$(SWIFT) build -c release $(SWIFTFLAGS) --product BeaconBench
	$(SWIFT) build -c release $(SWIFTFLAGS) --product DBusPathBench
	/usr/bin/python3 Benchmarks/run.py --beaconbridge $(RELEASE_BIN) \
	  --bench .build/release/BeaconBench --emitter $(BENCH_EMITTER) \
	  --python $(BENCH_VENV)/bin/python --bleak-script Benchmarks/bleak_consumer.py \
	  --floor $(BENCH_FLOOR) --harness .build/release/DBusPathBench --out docs/PERFORMANCE.md --repeats $(BENCH_REPEATS) $(BENCH_ARGS)

# `make code-order` rewrites packaging/link/hot-functions.txt: the functions the daemon runs in
# the bench's daemon phase, under callgrind (Benchmarks/code-order.py), which lld lays out side by
# side in the release build (DAEMON_LINK above). Rerun it when `make release` says the list is
# stale; `make bench` shows what it buys ("Daemon: RSS with 1000 beacons in range").
.PHONY: code-order
code-order: release-build $(BENCH_EMITTER) ## re-profile the daemon under callgrind and rewrite packaging/link/hot-functions.txt
	@scripts/install-deps.sh bench
	/usr/bin/python3 Benchmarks/code-order.py --daemon $(RELEASE_DAEMON) \
	  --cli $(RELEASE_BIN) --emitter $(BENCH_EMITTER) \
	  --out packaging/link/hot-functions.txt
	# lld reads the list at link time only: relink with it, then check it.
	rm -f $(RELEASE_DAEMON)
	$(RELEASE_DAEMON_BUILD)
	/usr/bin/python3 Benchmarks/code-order.py --check $(RELEASE_DAEMON)

# --- Input and output boundaries ----------------------------------------------------------------
# `make test-io` runs every subcommand (read from the CLI's command table) with stdin closed,
# stdout to /dev/full, to a closed pipe and closed, and fails unless each exits 1-128 with one
# plain line on stderr, in time (scripts/check-io-boundaries.py).
# `make fuzz-input` fuzzes the scenario reader, the configuration keyfile parser, the G-Zone
# payload loader and the trip events reader (JSONText) for FUZZ_INPUT_SECONDS each (FUZZ_RUNS=N: stop after N executions);
# `make test` runs them briefly. Crashers go into Fuzz/<target>/corpus.
FUZZ_INPUT_SECONDS ?= 60
FUZZ_INPUT_TEST_SECONDS ?= 10
FUZZ_INPUT_TARGETS := scenario keyfile gzone-payload trip-events
.PHONY: test-io fuzz-input fuzz-input-short

test-io: build ## every subcommand with stdin closed and stdout full, closed or a closed pipe
	scripts/check-io-boundaries.py $(BIN)

# `make test-hostile` drives the real binary through a table of hostile inputs, one row per
# class (a FIFO where a file is expected, non-UTF-8 arguments, a repeated option, read-only
# commands on a missing state directory, control and bidi characters in messages, two daemons on
# one state directory, a FIFO configuration on SIGHUP): each row asserts the exit status, the
# message and that nothing changed on disk, within a time limit (scripts/check-hostile.py).
.PHONY: test-hostile
test-hostile: build ## hostile inputs through the real binary, one row per class
	@scripts/install-deps.sh test
	scripts/check-hostile.py $(BIN)

fuzz-input: ## fuzz the scenario reader, the keyfile parser, the G-Zone payload loader and the trip events reader
	@scripts/install-deps.sh test
	Fuzz/run.sh $(FUZZ_INPUT_SECONDS) $(FUZZ_INPUT_TARGETS)

fuzz-input-short: ## the same, FUZZ_INPUT_TEST_SECONDS each
	@scripts/install-deps.sh test
	Fuzz/run.sh $(FUZZ_INPUT_TEST_SECONDS) $(FUZZ_INPUT_TARGETS)

# --- The box tier --------------------------------------------------------------------------------
# `make test-box` builds the .deb, boots it on a Debian 12 image (debootstrap, cached in
# /var/cache/beaconbridge-test, keyed by its package set) under qemu/TCG with systemd as PID 1,
# drives the scenarios by script (Tests/Box/guest.sh) and asserts on the host (Tests/Box/check.py).
# About 10 minutes warm, plus 5 to 10 for the image on a fresh machine; logs in .build/box-out.
# BEACONBRIDGE_SKIP_BOX=1 skips it, loudly, on machines that cannot run a VM; CI never sets it.
.PHONY: test-box

test-box: deb ## boot the .deb on a Debian 12 image under qemu with systemd (about 10 minutes)
	scripts/test-box.sh $(DEB)

# --- Instructions per advertisement: a regression gate that a noisy machine cannot fool. ---------
# callgrind counts the instructions per advertisement of BeaconCore's parse + track and
# whole pipeline, and of the D-Bus path (DBusPathBench: SignalSocket to the pipeline, fed by the
# C emitter through a private dbus-daemon); more than 5% over the committed baseline
# (Benchmarks/instructions-baseline.json) fails (Benchmarks/instructions.py). It also fails when
# four times the ManufacturerData entries of one message, or four times the BlueZ devices the
# mirror holds (DBusPathBench --devices, under the cap and past it), cost more than five times
# the instructions.
# `make bench-baseline` rewrites the baseline.
.PHONY: bench-check bench-baseline bench-check-tools
bench-check-tools: $(BENCH_EMITTER) ## build what bench-check runs (BeaconBench, DBusPathBench, the emitter)
	@scripts/install-deps.sh build
	@scripts/install-deps.sh test
	@scripts/install-deps.sh bench
	$(SWIFT) build -c release $(SWIFTFLAGS) --product BeaconBench
	$(SWIFT) build -c release $(SWIFTFLAGS) --product DBusPathBench
BENCH_CHECK := /usr/bin/python3 Benchmarks/instructions.py --bench .build/release/BeaconBench \
	--harness .build/release/DBusPathBench --emitter $(BENCH_EMITTER)
bench-check: bench-check-tools ## fail on 5% more instructions per advertisement than the baseline
	$(BENCH_CHECK)
bench-baseline: bench-check-tools ## rewrite Benchmarks/instructions-baseline.json
	$(BENCH_CHECK) --update

# --- BeaconCrypto's test vectors. ------------------------------------------------
# Tests/Crypto/vectors.json is written by Tests/Crypto/oracle.py from the specifications with
# Python's cryptography; BeaconCryptoTests checks the Swift side against it. Fails when the
# committed file is not what the oracle writes.
.PHONY: crypto-vectors
crypto-vectors: ## check Tests/Crypto/vectors.json is what the oracle writes
	@scripts/install-deps.sh test
	@tmp=$$(mktemp -d) && /usr/bin/python3 Tests/Crypto/oracle.py "$$tmp" && \
	  if cmp -s "$$tmp/vectors.json" Tests/Crypto/vectors.json; then rm -rf "$$tmp"; else \
	    echo "Tests/Crypto/vectors.json is stale: run 'python3 Tests/Crypto/oracle.py' and commit" >&2; rm -rf "$$tmp"; exit 1; fi

# --- Scaling: four times the input costs at most five times the work, counted in
# instructions by callgrind (Benchmarks/scaling.py), for beacons in range, open trips and the
# events of one batch. A scan per step (quadratic) gives 16 times; the run takes about a minute.
.PHONY: bench-scaling
bench-scaling: ## four times the input costs at most five times the instructions (callgrind)
	@scripts/install-deps.sh build
	@scripts/install-deps.sh test
	$(SWIFT) build -c release $(SWIFTFLAGS) --product BeaconBench
	/usr/bin/python3 Benchmarks/scaling.py --bench .build/release/BeaconBench
