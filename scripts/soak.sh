#!/usr/bin/env bash
# soak.sh runs one hour-long soak of the catalog (tag soak-long) and samples
# the harness's memory while it runs: every 10 s the resident set (VmRSS)
# of the jepsen-lite process goes to build/soak/<scenario>-rss.csv, as
# seconds since the start and kilobytes; at the end the peak (VmHWM) is
# printed and docs/performance.md's plot is drawn from the samples
# (go run ./scripts/rssplot). Usage: scripts/soak.sh <scenario> [run flags]
set -euo pipefail

name=${1:?usage: scripts/soak.sh <scenario> [run flags]}
shift
out=build/soak
mkdir -p "$out"
csv="$out/$name-rss.csv"
echo "seconds,rss_kb" > "$csv"
bin/jepsen-lite run "$name" --store "$out/store" "$@" > "$out/$name.log" 2>&1 &
pid=$!
trap 'kill -INT $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' INT TERM
start=$(date +%s)
hwm=0
while kill -0 "$pid" 2>/dev/null; do
	if rss=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status 2>/dev/null) && [ -n "$rss" ]; then
		echo "$(( $(date +%s) - start )),$rss" >> "$csv"
		h=$(awk '/^VmHWM:/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
		[ "${h:-0}" -gt "$hwm" ] && hwm=$h
	fi
	sleep 10
done
rc=0
wait "$pid" || rc=$?
echo "$name: exit $rc, peak RSS ${hwm} KB over $(( $(date +%s) - start )) s; samples in $csv"
tail -n 20 "$out/$name.log"
go run ./scripts/rssplot -title "$name: jepsen-lite's resident memory" "$csv" > "$out/$name-rss.svg"
echo "plot: $out/$name-rss.svg"
exit "$rc"
