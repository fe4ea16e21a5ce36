#!/usr/bin/env bash
# matrix.sh runs the datasheet's campaigns (one `jepsen-lite hunt --shrink`
# per row: each fault kind's first failure is shrunk) and renders
# docs/matrix.md from their campaign files, which are kept in
# docs/matrix/campaigns (the page is made again from them alone; the runs'
# stores stay under MATRIX_DIR). A row whose campaign file exists is kept,
# so an interrupted matrix goes on where it stopped and one row can be made
# again alone (MATRIX_ROWS=redlock MATRIX_FRESH=1); MATRIX_FRESH=1 runs the
# selected rows again. Settings: MATRIX_RUNS (runs per fault kind, 10),
# MATRIX_TIME_LIMIT (each run's length, 8s), MATRIX_PARALLEL (campaigns
# side by side, 2), MATRIX_DIR (logs and stores, build/matrix),
# MATRIX_ROWS (the rows to run, all by default), MATRIX_SHRINK (0 leaves
# the failures unshrunk; 1 by default), MATRIX_CHECK_TIMEOUT (the checkers'
# time budget per run, hunting and shrinking, as hunt --check-timeout; unset,
# hunt's own default: a run past it is unknown, counted neither as invalid
# nor as held, and a shrink run past it is undecided, neither failing nor
# passing: a candidate left undecided is not kept, and shrink counts it).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${MATRIX_DIR:-build/matrix}
campaigns=docs/matrix/campaigns
shrink=${MATRIX_SHRINK:-1}
runs=${MATRIX_RUNS:-10}
limit=${MATRIX_TIME_LIMIT:-8s}
parallel=${MATRIX_PARALLEL:-2}
check_timeout=${MATRIX_CHECK_TIMEOUT:-}
faults=client-pause,clock-bump,clock-strobe,client-clock,kill,restart,pause,failover,partition,reset,latency

# row name, hunt target, and an external lock client for the any-language rows.
rows=(
	"redlock|redlock|"
	"redsync|redsync|"
	"zk-recipe|zk-recipe|"
	"pg-advisory|pg-advisory|"
	"pg-timeout|pg-timeout|"
	"etcd-mutex|etcd-mutex|"
	"redis-single|docs/matrix/redis-single-replicated.yaml|"
	"redis-py|redis-single-baseline|python3 examples/anylang/redis_py_lock.py"
	"kazoo|zk-recipe-baseline|python3 examples/anylang/kazoo_lock.py"
	"python-etcd3|etcd-mutex-baseline|python3 examples/anylang/etcd3_lock.py"
	"curator|zk-recipe-baseline|examples/anylang/curator_lock.sh"
	"mysql-get-lock|mysql-get-lock|"
	"mysql-for-update|mysql-for-update|"
	"mysql-lease|mysql-lease|"
	"mysql-unique-row|mysql-unique-row|"
	"redis-single-cluster|redis-cluster-baseline|"
	"redsync-cluster|redsync-cluster|"
)

mkdir -p "$dir" "$campaigns"

hunt_row() {
	local name=$1 target=$2 command=$3
	if [[ ${MATRIX_FRESH:-0} != 1 && -s $campaigns/$name.json ]]; then
		echo "matrix: $name: kept $campaigns/$name.json"
		return 0
	fi
	local args=(hunt "$target" --runs "$runs" --time-limit "$limit" --faults "$faults"
		--store "$dir/store/$name" --json "$dir/$name.json.part" --quiet)
	if [[ -n $check_timeout ]]; then
		args+=(--check-timeout "$check_timeout")
	fi
	if [[ -n $command ]]; then
		args+=(--lock-command "$command")
	fi
	if [[ $shrink == 1 ]]; then
		args+=(--shrink)
	fi
	echo "matrix: $name: bin/jepsen-lite ${args[*]}"
	local rc=0
	bin/jepsen-lite "${args[@]}" >"$dir/$name.log" 2>&1 || rc=$?
	# 0: nothing found, 1: found; anything else lost the campaign (2: also
	# a campaign none of whose runs was decided).
	if [[ $rc -gt 1 ]]; then
		echo "matrix: $name: hunt exited $rc (see $dir/$name.log)" >&2
		return 1
	fi
	mv "$dir/$name.json.part" "$campaigns/$name.json"
	# The row's schedules are written anew from this campaign when the page
	# is rendered; those of an earlier campaign go.
	local k
	for k in ${faults//,/ }; do
		rm -f "docs/matrix/$name-$k.yaml"
	done
	echo "matrix: $name: done ($(tail -n 2 "$dir/$name.log" | head -n 1))"
}
export -f hunt_row
export dir campaigns runs limit faults shrink check_timeout

selected=()
for r in "${rows[@]}"; do
	name=${r%%|*}
	if [[ -z ${MATRIX_ROWS:-} || ",$MATRIX_ROWS," == *",$name,"* ]]; then
		selected+=("$r")
	fi
done

status=0
printf '%s\n' "${selected[@]}" |
	xargs -P "$parallel" -I{} bash -c 'IFS="|" read -r n t c <<<"{}"; hunt_row "$n" "$t" "$c"' || status=$?

# docs/matrix.md is made only from every row's campaign file; with rows
# missing, the page of those there is rendered under $dir instead. The
# failing cells' schedules go to docs/matrix either way, beside the
# campaign files they come from: a row's shrunk schedules are made from
# its runs' stores, which a later render (on another machine) lacks.
files=() missing=()
for r in "${rows[@]}"; do
	name=${r%%|*}
	if [[ -s $campaigns/$name.json ]]; then
		files+=("$campaigns/$name.json")
	else
		missing+=("$name")
	fi
done
out=docs/matrix.md schedules=docs/matrix
if ((${#missing[@]} > 0)); then
	out=$dir/matrix.md
	echo "matrix: no campaign file for ${missing[*]}: rendered $out, not docs/matrix.md, which needs every row" >&2
	status=1
fi
if ((${#files[@]} > 0)); then
	bin/jepsen-lite matrix --out "$out" --html "$dir/matrix.html" --schedules "$schedules" "${files[@]}"
fi
exit $status
