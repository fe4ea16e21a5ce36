#!/usr/bin/env bash
# test.sh runs every test (make test). Where a Docker engine answers, the node
# image is built first (make images, which does nothing when the image is
# there), so that the container backend's tests run rather than skip. Where no
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
# The container backend's conformance suite starts every topology of every
# system in containers, the Redis sentinel ones taking most of it: make
# test runs one topology a day, in turn (make test-docker runs them all;
# cluster/docker's other tests run whole).
export JEPSEN_LITE_DOCKER_SAMPLE="${JEPSEN_LITE_DOCKER_SAMPLE-day}"
engine=1
if ! docker info >/dev/null 2>&1; then
  engine=0
elif ! make --no-print-directory images NODE_IMAGE="${JEPSEN_LITE_NODE_IMAGE:-jepsen-lite/node:latest}"; then
  echo "test: the node image could not be built (make images failed above)" >&2
  exit 1
fi
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
"$GO" test -race -count=1 -p 1 -timeout 30m "${rest[@]}" || rc=$?
if [ "$engine" = 0 ]; then
  echo "test: the container backend (cluster/docker) was NOT tested: no Docker engine answers (docker info failed), so its tests skipped"
fi
exit "$rc"
