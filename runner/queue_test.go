package runner_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestQueueWorkload runs the queue workload end to end against a real
// redis-server with the single-script capture and a reaper whose timeout
// outlasts the run: the history (format version 5) starts with the task
// table, records captures, processing, set-statuses and the reaper's passes
// under a process of their own, and the checkers find every task captured
// by one worker at a time and none lost.
func TestQueueWorkload(t *testing.T) {
	sc, err := scenarios.Parse([]byte(`
name: queue-test
system: {name: redis, nodes: 1}
workload: queue
queue:
  tasks: 20
  queues: 2
  limit: 3
  fail-rate: 0.3
  reaper: {interval: 100ms, timeout: 1m}
lock: {algorithm: redis-zadd-queue-script, ttl: 1s}
workers: 4
duration: 2s
quiet: 200ms
expect: {verdict: valid, absent: [double-capture, stale-status, lost-update], liveness: live}
`), "queue-test.yaml", runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	res, err := runner.Run(context.Background(), sc, runner.WithStore(store), runner.WithSeed(3))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Results
	if !r.ExpectationMet {
		t.Fatalf("verdict %s, liveness %+v; checkers: %+v", r.Verdict, r.Liveness, r.Checkers)
	}
	h, _, err := history.ReadFile(filepath.Join(res.Dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if v := history.Version(h); v != history.FormatVersion || !h[1].IsTasks() {
		t.Fatalf("version %d, second op %+v: want version %d and the task table", v, h[1], history.FormatVersion)
	}
	specs, err := history.TasksOf(h[1])
	if err != nil || len(specs) != 20 {
		t.Fatalf("task table: %v, %v", specs, err)
	}
	count := map[string]int{}
	captured := 0
	for _, op := range h {
		if op.Type != history.OK {
			continue
		}
		count[op.F]++
		if op.F == history.FReap && op.Client != 4 {
			t.Errorf("reap by client %d, want the reaper's own, 4: %+v", op.Client, op)
		}
		if op.F == history.FCapture {
			ts, err := history.CapturedOf(op)
			if err != nil {
				t.Fatal(err)
			}
			captured += len(ts)
		}
	}
	for _, f := range []string{history.FCapture, history.FSetStatus, history.FReap, history.FWrite} {
		if count[f] == 0 {
			t.Errorf("no %s ok in the history: %v", f, count)
		}
	}
	if r.Liveness == nil || r.Liveness.Captures != captured || captured == 0 {
		t.Errorf("liveness counts %+v captures, the history %d", r.Liveness, captured)
	}
	i := slices.IndexFunc(r.Checkers, func(c checker.Result) bool { return c.Name == "queue" })
	if i < 0 || r.Checkers[i].Verdict != checker.Valid {
		t.Fatalf("queue checker: %+v", r.Checkers)
	}
}
