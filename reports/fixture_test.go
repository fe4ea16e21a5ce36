package reports

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

var update = flag.Bool("update", false, "rewrite the saved run directories under testdata/store")

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// invalidHistory is a small run of two workers on key k: worker 1 acquires k
// while worker 0 still holds it (a double-hold, ops 1 and 9), worker 0
// crashes on its release and again on a later acquire of unknown outcome,
// and the nemesis partitions, bumps a clock, heals, resets it and pauses a
// client.
func invalidHistory() history.History {
	part := history.JSONValue(map[string]any{"targets": []string{"n1"}, "kind": "isolate"})
	bump := history.JSONValue(map[string]any{"node": "n1", "delta": "+30s"})
	ops := []history.Op{
		{Time: sec(0.10), Process: 0, Client: 0, Type: history.Invoke, F: "acquire", Key: "k", TTL: 5 * time.Second},
		{Time: sec(0.12), Process: 0, Client: 0, Type: history.OK, F: "acquire", Key: "k", Token: 1, Until: sec(5.10)},
		{Time: sec(0.20), Process: 1, Client: 1, Type: history.Invoke, F: "acquire", Key: "k", TTL: 5 * time.Second},
		{Time: sec(0.21), Process: 1, Client: 1, Type: history.Fail, F: "acquire", Key: "k", Error: "lock busy"},
		{Time: sec(1.00), Process: -1, Type: history.Info, F: "partition", Value: part},
		{Time: sec(1.20), Process: 0, Client: 0, Type: history.Invoke, F: "write", Key: "k", Token: 1, Value: history.IntValue(1)},
		{Time: sec(1.30), Process: 0, Client: 0, Type: history.OK, F: "write", Key: "k", Token: 1, Value: history.IntValue(1), Applied: sec(1.25)},
		{Time: sec(2.00), Process: -1, Type: history.Info, F: "clock-bump", Value: bump},
		{Time: sec(2.10), Process: 1, Client: 1, Type: history.Invoke, F: "acquire", Key: "k", TTL: 3 * time.Second},
		{Time: sec(2.20), Process: 1, Client: 1, Type: history.OK, F: "acquire", Key: "k", Token: 2, Until: sec(5.20)},
		{Time: sec(2.30), Process: 1, Client: 1, Type: history.Invoke, F: "write", Key: "k", Token: 2, Value: history.IntValue(1)},
		{Time: sec(2.40), Process: 1, Client: 1, Type: history.OK, F: "write", Key: "k", Token: 2, Value: history.IntValue(1), Applied: sec(2.35)},
		{Time: sec(3.00), Process: 0, Client: 0, Type: history.Invoke, F: "release", Key: "k"},
		{Time: sec(4.00), Process: 0, Client: 0, Type: history.Info, F: "release", Key: "k", Error: "i/o timeout"},
		{Time: sec(4.50), Process: -1, Type: history.Info, F: "heal", Value: part},
		{Time: sec(4.60), Process: 2, Client: 0, Type: history.Invoke, F: "acquire", Key: "k", TTL: 5 * time.Second},
		{Time: sec(5.60), Process: 2, Client: 0, Type: history.Info, F: "acquire", Key: "k", Error: "context deadline exceeded"},
		{Time: sec(5.70), Process: 3, Client: 0, Type: history.Invoke, F: "acquire", Key: "k", TTL: 5 * time.Second},
		{Time: sec(5.80), Process: 3, Client: 0, Type: history.Fail, F: "acquire", Key: "k", Error: "lock busy"},
		{Time: sec(6.00), Process: 1, Client: 1, Type: history.Invoke, F: "release", Key: "k"},
		{Time: sec(6.10), Process: 1, Client: 1, Type: history.OK, F: "release", Key: "k"},
		{Time: sec(6.50), Process: -1, Type: history.Info, F: "clock-reset", Value: bump},
		{Time: sec(7.00), Process: -1, Type: history.Info, F: "client-pause", Value: history.JSONValue(map[string]any{"worker": 1, "point": "before-write", "duration": "1s"})},
		{Time: sec(10.00), Process: 3, Client: 0, Type: history.Invoke, F: "acquire", Key: "k", TTL: 5 * time.Second},
		{Time: sec(10.10), Process: 3, Client: 0, Type: history.OK, F: "acquire", Key: "k", Token: 3, Until: sec(15.10)},
		{Time: sec(11.00), Process: 3, Client: 0, Type: history.Invoke, F: "release", Key: "k"},
		{Time: sec(11.10), Process: 3, Client: 0, Type: history.OK, F: "release", Key: "k"},
	}
	for i := range ops {
		ops[i].Index = i
	}
	return ops
}

const doubleHoldMessage = "worker 1 acquired k at 2.200s while worker 0 held it since 0.120s, valid until 5.100s"

func invalidResults(h history.History) Results {
	checkers := []checker.Result{
		{Name: "mutex", Verdict: checker.Invalid, Elapsed: 1834 * time.Microsecond, Anomalies: []checker.Anomaly{
			{Kind: checker.DoubleHold, Key: "k", Ops: []int{1, 9}, Message: doubleHoldMessage},
		}},
		{Name: "fencing", Verdict: checker.Valid, Elapsed: 120 * time.Microsecond, Anomalies: []checker.Anomaly{}},
	}
	exp := &checker.Expectation{Verdict: checker.Invalid, Anomalies: []string{checker.DoubleHold}}
	v := checker.Overall(checkers)
	return Results{Scenario: "redis-single-clock-bump", Seed: 3, Verdict: v, Expected: exp,
		ExpectationMet: exp.Met(v, checkers, nil), Checkers: checkers, Stats: CountStats(h)}
}

const invalidScenarioYAML = `name: redis-single-clock-bump
description: |
  One Redis node; its clock jumps forward 30s while worker 0 holds the lock.
seed: 3
expect: {verdict: invalid, anomalies: [double-hold]}
`

// validHistory is a short correct run of one worker.
func validHistory() history.History {
	var h history.History
	t := sec(0.05)
	for i := 0; i < 5; i++ {
		h = append(h,
			history.Op{Time: t, Process: 0, Type: history.Invoke, F: "acquire", Key: "k", TTL: time.Second},
			history.Op{Time: t + sec(0.01), Process: 0, Type: history.OK, F: "acquire", Key: "k", Token: uint64(i + 1)},
			history.Op{Time: t + sec(0.05), Process: 0, Type: history.Invoke, F: "release", Key: "k"},
			history.Op{Time: t + sec(0.06), Process: 0, Type: history.OK, F: "release", Key: "k"},
		)
		t += sec(0.2)
	}
	for i := range h {
		h[i].Index = i
	}
	return h
}

func validResults(h history.History) Results {
	checkers := []checker.Result{{Name: "mutex", Verdict: checker.Valid, Elapsed: 300 * time.Microsecond, Anomalies: []checker.Anomaly{}}}
	return Results{Scenario: "etcd-mutex-partition", Seed: 11, Verdict: checker.Valid, ExpectationMet: true,
		Checkers: checkers, Stats: CountStats(h)}
}

// writeRunDir writes a run directory: scenario.yaml, history.jsonl and
// results.json.
func writeRunDir(t testing.TB, dir string, h history.History, r Results, scenarioYAML string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeHistoryFile(t, filepath.Join(dir, HistoryFile), h)
	if err := WriteResults(dir, &r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ScenarioFile), []byte(scenarioYAML), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeHistoryFile(t testing.TB, path string, h history.History) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, op := range h {
		if err := enc.Encode(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Saved run directories of testdata/store (rewritten with -update).
const (
	savedInvalidRun = "redis-single-clock-bump/20261122T031500.000Z"
	savedValidRun   = "etcd-mutex-partition/20261122T032000.000Z"
)

// savedStore returns testdata/store, first rewriting its two runs from
// invalidHistory and validHistory when the tests run with -update.
func savedStore(t testing.TB) string {
	t.Helper()
	store := filepath.Join("testdata", "store")
	if *update {
		h := invalidHistory()
		writeRunDir(t, filepath.Join(store, savedInvalidRun), h, invalidResults(h), invalidScenarioYAML)
		v := validHistory()
		writeRunDir(t, filepath.Join(store, savedValidRun), v, validResults(v),
			"name: etcd-mutex-partition\ndescription: etcd mutex under a partition of the leader.\nseed: 11\n")
	}
	return store
}
