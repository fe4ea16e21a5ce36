#!/usr/bin/env bash
# test.sh runs every test (make test). Where a Docker engine answers, the node
# image is built (make images, which does nothing when the image is there)
# before the integration packages run, so that the container backend's tests
# run rather than skip. Where no
# engine answers, the last line of the output says that the container backend
# was not tested.
#
# The integration packages are tested one at a time: their tests start real
# servers and time their faults, and two cores shared by several suites would
# blur those timings. The packages of pure logic, listed below, run two at a
# time before them. The builds need no such care, and are made first, side by
# side.
set -uo pipefail
GO="${GO:-go}"
# The backends' conformance suite starts every topology of every system,
# the Redis sentinel and cluster ones taking most of it: make test runs one
# topology a day on each backend, in turn (go test ./cluster/local and make
# test-docker run them all; the backends' other tests, and every other
# test of the local backend's clusters, run whole).
export JEPSEN_LITE_CONFORMANCE_SAMPLE="${JEPSEN_LITE_CONFORMANCE_SAMPLE-day}"
# The node image is built in the background while the tests are built and
# the packages of pure logic run, none of which needs it (its build waits
# mostly on Debian's packages); the integration packages wait for it.
engine=1
images_pid=
images_log=$(mktemp)
trap 'rm -f "$images_log"; [ -n "$images_pid" ] && kill "$images_pid" 2>/dev/null' EXIT
if ! docker info >/dev/null 2>&1; then
  engine=0
else
  make --no-print-directory images NODE_IMAGE="${JEPSEN_LITE_NODE_IMAGE:-jepsen-lite/node:latest}" >"$images_log" 2>&1 &
  images_pid=$!
fi
# images_built waits for the image's build, prints its output and says
# whether it succeeded.
images_built() {
  [ -z "$images_pid" ] && return 0
  local rc=0
  wait "$images_pid" || rc=$?
  images_pid=
  cat "$images_log"
  if [ "$rc" != 0 ]; then
    echo "test: the node image could not be built (make images failed above)" >&2
    return 1
  fi
}
# Every test binary is built first, packages side by side (the builds use
# both cores; -exec true runs none of the tests), so that the run below,
# one package at a time, only runs them.
if ! "$GO" test -race -count=1 -exec true ./... >/dev/null; then
  echo "test: building the tests failed (the run below says where)" >&2
fi
# The packages of pure logic (checkers, histories, shrinking, the code and
# doc rules) start no server, no browser and no network, and time no fault:
# they run two at a time, so that their long equivalence tests share the
# cores. They run twice: under the race detector with -short (its
# equivalence tests compare a tenth to a fifth of their generated
# histories, every code path still taken), and without it over all of
# them, which the race detector would make ten times slower. Every other
# package, a new one too until it is listed here, runs alone, under the
# race detector.
logic=(
  ./checker ./checker/anomaly ./checker/internal/fixture ./checker/reference
  ./checker/synth ./checker/synth/cmd/synth-history ./coderules ./designdoc
  ./history ./history/jepsen ./nemesis/faultkind ./progress ./shrink
  ./scripts/rssplot
)
mod=$("$GO" list -m)
rest=()
for p in $("$GO" list ./...); do
  rel=".${p#"$mod"}"
  case " ${logic[*]} " in *" $rel "*) ;; *) rest+=("$rel") ;; esac
done
rc=0
# The nested module lockapi (a go.mod of its own, outside ./...) is pure
# logic too.
"$GO" test -C lockapi -race -count=1 -timeout 30m ./... || rc=$?
"$GO" test -race -short -count=1 -p 2 -timeout 30m "${logic[@]}" || rc=$?
"$GO" test -count=1 -p 2 -timeout 30m "${logic[@]}" || rc=$?
images_built || exit 1
"$GO" test -race -count=1 -p 1 -timeout 30m "${rest[@]}" || rc=$?
if [ "$engine" = 0 ]; then
  echo "test: the container backend (cluster/docker) was NOT tested: no Docker engine answers (docker info failed), so its tests skipped"
fi
exit "$rc"
