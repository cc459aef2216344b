#!/usr/bin/env bash
# Drives the installed shell completions for real: scripts/check-completions.sh ROOT
# (ROOT is a `make install DESTDIR=ROOT PREFIX=/usr` tree; check-system-files.sh runs it).
# bash: bash-completion's own loader finds the file under ROOT and the completion function
# answers COMP_WORDS as bash would set them; fish: `complete -C` on the installed file; zsh:
# `zsh -n`, and compinit picks up the #compdef. Prints PASS/FAIL lines; exits 1 on a failure.
set -uo pipefail
root=$(cd "$1" && pwd)
bin=$root/usr/bin/beaconbridge
failed=0
pass() { echo "PASS  completion: $*"; }
fail() {
  echo "FAIL  completion: $*"
  failed=1
}
T=$(mktemp -d /tmp/bb-completion.XXXXXX)
trap 'rm -rf "$T"' EXIT

# A store with one pairing, and no bus (so `pairs --json` reads the store), for device IDs; the
# installed binary first on PATH.
export PATH="$root/usr/bin:$PATH" BEACONBRIDGE_STATE_DIR=$T/state DBUS_SYSTEM_BUS_ADDRESS=unix:path=$T/no-bus
"$bin" pair --uuid E2C56DB5-DFFB-48D2-B060-D0F5A71096E0 --device-id UNIT-7 >/dev/null
"$bin" pair --uuid E2C56DB5-DFFB-48D2-B060-D0F5A71096E1 --device-id VAN-9 >/dev/null

# bash: what `beaconbridge <line><TAB>` offers, sorted, one per line.
bash_complete() {
  XDG_DATA_DIRS="$root/usr/share" bash --norc --noprofile -c '
    source /usr/share/bash-completion/bash_completion
    _completion_loader beaconbridge
    [ "$(complete -p beaconbridge)" = "complete -F _beaconbridge beaconbridge" ] || { echo "NOT LOADED: $(complete -p beaconbridge 2>&1)"; exit; }
    line="beaconbridge $1"
    read -ra COMP_WORDS <<<"$line"
    [[ $line == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) COMP_LINE=$line COMP_POINT=${#line}
    _beaconbridge beaconbridge "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}"' _ "$1" | sed '/^$/d' | LC_ALL=C sort | paste -sd' '
}
expect_bash() { # expect_bash LINE EXPECTED
  local got
  got=$(bash_complete "$1")
  if [ "$got" = "$2" ]; then pass "bash '$1<TAB>' → $2"; else fail "bash '$1<TAB>' → '$got', expected '$2'"; fi
}
commands=$("$bin" --help | sed -n '/^COMMANDS:/,/^$/s/^  \([a-z]*\) .*/\1/p' | LC_ALL=C sort | paste -sd' ')
expect_bash "" "$(printf '%s\n' $commands help --help --version | LC_ALL=C sort | paste -sd' ')"
expect_bash "pa" "pair pairs"
expect_bash "scan --" "$(printf '%s\n' --duration --backend --adapter --state-dir --json --help | LC_ALL=C sort | paste -sd' ')"
expect_bash "scan --backend " "bluez hci"
expect_bash "pair --nearest --backend h" "hci"
expect_bash "trip " "assign end events retry start"
expect_bash "gzone d" "diff"
expect_bash "help st" "status"
expect_bash "unpair --device-id " "UNIT-7 VAN-9"
expect_bash "trip assign --trip-id t1 --device-id V" "VAN-9"
expect_bash "scan --adapter " "$(ls /sys/class/bluetooth 2>/dev/null | grep '^hci' | LC_ALL=C sort | paste -sd' ')"
mkdir -p "$T/files/captures" && touch "$T/files/capture.btsnoop"
(cd "$T/files" && expect_bash "replay cap" "capture.btsnoop captures")
# Every command's options, as its --help names them.
miss=()
for command in $commands; do
  want=$(printf '%s\n' $("$bin" "$command" --help | grep -o -- '--[a-z][a-z-]*') --help | LC_ALL=C sort -u | paste -sd' ')
  got=$(bash_complete "$command --")
  [ "$got" = "$want" ] || miss+=("$command: '$got' vs --help '$want'")
done
if [ ${#miss[@]} -eq 0 ]; then pass "bash: every command's options are exactly those its --help names"; else fail "bash: ${miss[*]}"; fi

# fish: complete -C on the installed file.
fish_complete() {
  fish --no-config -c "set -p fish_complete_path $root/usr/share/fish/vendor_completions.d; complete -C '$1'" 2>&1 |
    cut -f1 | LC_ALL=C sort | paste -sd' '
}
if fish -n "$root/usr/share/fish/vendor_completions.d/beaconbridge.fish"; then pass "fish -n: the fish completion parses"; else fail "fish -n"; fi
expect_fish() {
  local got
  got=$(fish_complete "$1")
  if [ "$got" = "$2" ]; then pass "fish '$1<TAB>' → $2"; else fail "fish '$1<TAB>' → '$got', expected '$2'"; fi
}
expect_fish "beaconbridge pa" "pair pairs"
expect_fish "beaconbridge scan --backend " "bluez hci"
expect_fish "beaconbridge trip " "assign end events retry start"
expect_fish "beaconbridge unpair --device-id " "UNIT-7 VAN-9"
expect_fish "beaconbridge status --" "--help --json"

# zsh: parses, and compinit binds it to beaconbridge from the vendor-completions folder.
if zsh -n "$root/usr/share/zsh/vendor-completions/_beaconbridge"; then pass "zsh -n: the zsh completion parses"; else fail "zsh -n"; fi
bound=$(zsh -f -c "fpath=($root/usr/share/zsh/vendor-completions \$fpath); autoload -U compinit; compinit -u -d $T/zcompdump; print \$_comps[beaconbridge]" 2>&1)
if [ "$bound" = _beaconbridge ]; then pass "zsh: compinit binds _beaconbridge to beaconbridge"; else fail "zsh: compinit: '$bound'"; fi

exit $failed
