#!/usr/bin/env bash
# matrix.sh runs the datasheet's campaigns (one `jepsen-lite hunt` per row)
# and renders docs/matrix.md from them. A row whose campaign file exists is
# kept, so an interrupted matrix goes on where it stopped; MATRIX_FRESH=1
# runs every row again. Settings: MATRIX_RUNS (runs per fault kind, 10),
# MATRIX_TIME_LIMIT (each run's length, 8s), MATRIX_PARALLEL (campaigns
# side by side, 2), MATRIX_DIR (campaign files, logs and stores,
# build/matrix), MATRIX_ROWS (the rows to run, all by default).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${MATRIX_DIR:-build/matrix}
runs=${MATRIX_RUNS:-10}
limit=${MATRIX_TIME_LIMIT:-8s}
parallel=${MATRIX_PARALLEL:-2}
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
)

mkdir -p "$dir"
if [[ ${MATRIX_FRESH:-0} == 1 ]]; then
	rm -f "$dir"/*.json
fi

hunt_row() {
	local name=$1 target=$2 command=$3
	if [[ -s $dir/$name.json ]]; then
		echo "matrix: $name: kept $dir/$name.json"
		return 0
	fi
	local args=(hunt "$target" --runs "$runs" --time-limit "$limit" --faults "$faults"
		--store "$dir/store/$name" --json "$dir/$name.json.part" --quiet)
	if [[ -n $command ]]; then
		args+=(--lock-command "$command")
	fi
	echo "matrix: $name: bin/jepsen-lite ${args[*]}"
	local rc=0
	bin/jepsen-lite "${args[@]}" >"$dir/$name.log" 2>&1 || rc=$?
	# 0: nothing found, 1: found; anything else lost the campaign.
	if [[ $rc -gt 1 ]]; then
		echo "matrix: $name: hunt exited $rc (see $dir/$name.log)" >&2
		return 1
	fi
	mv "$dir/$name.json.part" "$dir/$name.json"
	echo "matrix: $name: done ($(tail -n 2 "$dir/$name.log" | head -n 1))"
}
export -f hunt_row
export dir runs limit faults

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

files=()
for r in "${rows[@]}"; do
	name=${r%%|*}
	[[ -s $dir/$name.json ]] && files+=("$dir/$name.json")
done
bin/jepsen-lite matrix --out docs/matrix.md --html "$dir/matrix.html" --schedules docs/matrix "${files[@]}"
exit $status
