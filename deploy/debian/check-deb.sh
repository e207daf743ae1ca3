#!/usr/bin/env bash
# Check a built spinscope .deb: its contents (binary, a man page per command, completions,
# the watch unit and its /etc/spinscope files, rules, dashboard, copyright), its dependency on
# libpcap, and that the packaged binary runs when unpacked into a temp dir (dpkg-deb -x).
# Usage: deploy/debian/check-deb.sh [target/debian/spinscope_*.deb]
set -euo pipefail
cd "$(dirname "$0")/../.."
deb=${1:-$(ls -t target/debian/spinscope_*.deb | head -1)}
fail() { echo "check-deb: $deb: $*" >&2; exit 1; }

long=$(dpkg-deb -c "$deb")
list=$(awk '{print $6}' <<<"$long")
has() { grep -qx "./$1" <<<"$list" || fail "missing $1"; }
has usr/bin/spinscope
has lib/systemd/system/spinscope-watch.service
has etc/spinscope/watch.conf
has etc/spinscope/my.cnf
has usr/share/bash-completion/completions/spinscope
has usr/share/zsh/vendor-completions/_spinscope
has usr/share/fish/vendor_completions.d/spinscope.fish
has usr/share/spinscope/prometheus/spinscope-rules.yml
has usr/share/spinscope/grafana/spinscope-watch.json
has usr/share/doc/spinscope/copyright
has usr/share/man/man1/spinscope.1.gz
grep -qE '^-rw------- (root/root|0/0) .* ./etc/spinscope/my.cnf$' <<<"$long" \
  || fail "etc/spinscope/my.cnf is not mode 0600 root:root"
grep -q 'libpcap0\.8' <<<"$(dpkg-deb -f "$deb" Depends)" || fail "no Depends on libpcap0.8"
grep -qx /etc/spinscope/watch.conf <<<"$(dpkg-deb -I "$deb" conffiles)" || fail "watch.conf is no conffile"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$deb" "$tmp"
bin="$tmp/usr/bin/spinscope"
# One man page per command and subcommand the binary has.
for cmd in $("$bin" --help | awk '/^Commands:/{on=1;next} on&&/^  [a-z]/{print $1} /^$/{on=0}'); do
  [ "$cmd" = help ] && continue
  [ -e "$tmp/usr/share/man/man1/spinscope-$cmd.1.gz" ] || fail "no man page for $cmd"
done
! grep -qE '\.symtab|\.debug_info' <<<"$(readelf -S "$bin")" || fail "binary not stripped"
grep -q '^spinscope ' <<<"$("$bin" --version)" || fail "the packaged binary does not run"
# Built without the test-seams feature: the test switches are not in the binary at all.
! grep -aqE 'SPINSCOPE_FAULT|SPINSCOPE_TEST_CLOCK_SHIFT_S' "$bin" \
  || fail "the packaged binary reads a test switch (built with --features test-seams?)"
grep -q '"schema": *"spinscope.spin/1"' <<<"$("$bin" spin --server 8.0.36 --pause-ns 40 --json)" \
  || fail "the packaged binary's spin gave no document"
grep -q 'metrics.*listen' <<<"$(zcat "$tmp/usr/share/man/man1/spinscope-watch.1.gz")" \
  || fail "spinscope-watch(1) does not document --metrics-listen"
size=$(stat -c %s "$bin")
echo "check-deb: $deb ok: $(wc -l <<<"$list") entries, binary $size bytes, $(dpkg-deb -f "$deb" Depends)"
