#!/usr/bin/env bash
# interrupt.sh measures how long jepsen-lite takes to exit once interrupted
# (docs/performance.md, "Interrupting"; make interrupt). It prints one line
# per try: the exit code and the time from the signal to the exit.
#
#   check:  TRIES offline checks of a big synthetic history (OPS ops, about
#           125 bytes an op), each sent SIGINT once its reading has begun,
#           0.5 s later at each try, so that the tries fall all through the
#           reading and the checks;
#   run:    RUNS runs of redis-single-baseline sent SIGINT while they drive:
#           the time to exit includes the teardown of the servers;
#   again:  RUNS runs sent SIGINT while they drive, and SIGINT again once the
#           first is being handled: the time is from the second signal.
#
# Every try must exit 2; the script exits 1 when one did not.
set -euo pipefail
GO="${GO:-go}"
OPS="${OPS:-6000000}"
TRIES="${TRIES:-10}"
RUNS="${RUNS:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$GO" build -o "$work/jepsen-lite" ./cmd/jepsen-lite
"$GO" build -o "$work/synth-history" ./checker/synth/cmd/synth-history
bin="$work/jepsen-lite"
history="$work/history.jsonl"
"$work/synth-history" -out "$history" -ops "$OPS" >/dev/null
echo "history: $OPS ops, $(du -m "$history" | cut -f1) MB; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
failed=0

now() { date +%s.%N; }

# reading pid: whether process pid has the history open and has read some.
reading() {
  local fd
  for fd in /proc/"$1"/fd/*; do
    if [ "$(readlink "$fd" 2>/dev/null)" = "$history" ]; then
      awk '/^pos:/ { exit !($2 > 0) }' /proc/"$1"/fdinfo/"${fd##*/}" 2>/dev/null && return 0
    fi
  done
  return 1
}

# waitlog file text pid: waits until file holds text, or pid has exited.
waitlog() {
  until grep -q "$2" "$1" 2>/dev/null; do
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.01
  done
}

# report what try code t0: prints the try's line and notes a wrong code.
report() {
  printf '%-6s %-26s exit %-3s %6.3f s to exit\n' "$1" "$2" "$3" "$(echo "$(now) - $4" | bc)"
  [ "$3" = 2 ] || failed=1
}

for try in $(seq 1 "$TRIES"); do
  "$bin" check "$history" --check-timeout 10m >"$work/out" 2>"$work/err" &
  pid=$!
  until reading "$pid"; do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.005
  done
  delay="$(echo "($try - 1) * 0.5" | bc)"
  sleep "$delay"
  t0="$(now)"
  kill -INT "$pid"
  code=0
  wait "$pid" || code=$?
  report check "try $try, $delay s into it" "$code" "$t0"
  grep -q "check: interrupted" "$work/err" || { echo "  did not say it was interrupted:"; cat "$work/err" "$work/out"; failed=1; }
done

for mode in run again; do
  for try in $(seq 1 "$RUNS"); do
    "$bin" run redis-single-baseline --time-limit 60s --store "$work/store" -v >"$work/out" 2>"$work/err" &
    pid=$!
    waitlog "$work/err" "workers ready" "$pid" || true
    sleep 1
    t0="$(now)"
    kill -INT "$pid"
    if [ "$mode" = again ]; then
      waitlog "$work/err" "interrupted: stopping" "$pid" || true
      t0="$(now)"
      kill -INT "$pid" 2>/dev/null || true
    fi
    code=0
    wait "$pid" || code=$?
    report "$mode" "try $try" "$code" "$t0"
  done
done
# What the second interrupt left the next run removes: run one.
"$bin" run redis-single-baseline --time-limit 1s --store "$work/store" >/dev/null 2>&1 || true
exit "$failed"
