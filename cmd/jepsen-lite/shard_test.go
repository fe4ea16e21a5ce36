package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/gate"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// validRun is a history in which worker 1 is granted k only after worker 0
// released it: valid.
const validRun = `{"index":0,"time":0,"process":-1,"type":"info","f":"history","value":{"format":"jepsen-lite","version":2}}
{"index":1,"time":100000000,"process":0,"client":0,"type":"invoke","f":"acquire","key":"k","ttl":5000000000}
{"index":2,"time":110000000,"process":0,"client":0,"type":"ok","f":"acquire","key":"k","lease":5000000000}
{"index":3,"time":200000000,"process":0,"client":0,"type":"invoke","f":"release","key":"k"}
{"index":4,"time":210000000,"process":0,"client":0,"type":"ok","f":"release","key":"k"}
{"index":5,"time":1000000000,"process":1,"client":1,"type":"invoke","f":"acquire","key":"k","ttl":5000000000}
{"index":6,"time":1010000000,"process":1,"client":1,"type":"ok","f":"acquire","key":"k","lease":5000000000}
`

// runStamp matches the start time in a run directory's name.
var runStamp = regexp.MustCompile(`\d{8}T\d{6}\.\d{3}Z-x`)

// TestGateShardsMergeFromStores stores four runs of redis-failover-async
// (seeds 1 and 3 with a double grant, 2 and 4 valid) once in one store and
// once split by --shard 1/2 and 2/2 into two stores, as two CI machines
// would (each part's runs timed from the start, so that their times do not
// follow their seeds), and requires the gate re-checked from the two stores to print the
// same table and write the same JUnit and Markdown (but for the stores'
// names) as from the one store; so must the gate that re-checks the one
// store three runs at a time (--parallel 3).
func TestGateShardsMergeFromStores(t *testing.T) {
	const name = "redis-failover-async"
	const seeds = 4
	sc, err := scenarios.Load(name, runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	whole, parts := filepath.Join(root, "whole"), []string{filepath.Join(root, "part-1"), filepath.Join(root, "part-2")}
	began := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for seed := 1; seed <= seeds; seed++ {
		putSeededRun(t, whole, sc, seed, began.Add(time.Duration(seed)*time.Minute))
	}
	placed := 0
	for i, store := range parts {
		// Each machine runs its part from the start, the second a second
		// earlier than the first: the runs' times do not follow their seeds.
		for k, p := range (gate.Shard{Index: i + 1, Count: len(parts)}).Split([]*scenarios.Scenario{sc}, seeds) {
			putSeededRun(t, store, sc, p.Seed, began.Add(time.Duration(k+1)*time.Minute-time.Duration(i)*time.Second))
			placed++
		}
	}
	if placed != seeds {
		t.Fatalf("the parts hold %d runs, want %d", placed, seeds)
	}
	stores := append([]string{whole}, parts...)
	run := func(from, tag string, extra ...string) (table, junit, md string) {
		t.Helper()
		args := append([]string{name, "--seeds", fmt.Sprint(seeds)}, extra...)
		return gateFromStore(t, filepath.Join(root, "out-"+tag), from, stores, args...)
	}
	t1, j1, m1 := run(whole, "whole")
	t2, j2, m2 := run(strings.Join(parts, ","), "merged")
	t3, j3, m3 := run(whole, "parallel", "--parallel", "3")
	if t1 != t3 || j1 != j3 || m1 != m3 {
		t.Errorf("--parallel 3 differs from one at a time:\n%s\n%s\n%s\nwant\n%s\n%s\n%s", t3, j3, m3, t1, j1, m1)
	}
	if !strings.Contains(t1, "valid×2 invalid×2") {
		t.Errorf("the whole store's table lacks the four runs:\n%s", t1)
	}
	if t1 != t2 {
		t.Errorf("tables differ:\nwhole:\n%s\nmerged:\n%s", t1, t2)
	}
	if j1 != j2 {
		t.Errorf("JUnit differs:\nwhole:\n%s\nmerged:\n%s", j1, j2)
	}
	if m1 != m2 {
		t.Errorf("Markdown differs:\nwhole:\n%s\nmerged:\n%s", m1, m2)
	}
}

// putSeededRun stores in store a run of sc with seed that began at stamp
// and ended 10 s later: a double grant for an odd seed, a valid history for
// an even one, and a results.json that says valid.
func putSeededRun(t *testing.T, store string, sc *scenarios.Scenario, seed int, stamp time.Time) {
	t.Helper()
	run := *sc
	run.Seed = uint64(seed)
	yml, err := scenarios.Marshal(&run)
	if err != nil {
		t.Fatal(err)
	}
	hist := validRun
	if seed%2 == 1 {
		hist = doubleGrant
	}
	results := fmt.Sprintf(`{"scenario":%q,"seed":%d,"verdict":"valid","checkers":[],"stats":{}}`+"\n", sc.Name, seed)
	files := map[string]string{reports.ScenarioFile: string(yml), reports.HistoryFile: hist, reports.ResultsFile: results}
	dir := writeRunDir(t, filepath.Join(store, sc.Name, stamp.Format(reports.RunDirTimestampFormat)+"-x"), files)
	end := stamp.Add(10 * time.Second)
	for f := range files {
		if err := os.Chtimes(filepath.Join(dir, f), end, end); err != nil {
			t.Fatal(err)
		}
	}
}

// gateFromStore runs gate args --from-store from with --junit and
// --markdown into the new directory out, requires it to exit 1 (the valid
// runs miss the expectation), and returns its table, and its JUnit and
// Markdown with run directories told apart by nothing but their seeds
// (stores, any of stores, and start times replaced).
func gateFromStore(t *testing.T, out, from string, stores []string, args ...string) (table, junit, md string) {
	t.Helper()
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	j, m := filepath.Join(out, "gate.xml"), filepath.Join(out, "scenarios.md")
	var stdout, stderr bytes.Buffer
	code, err := gateCmd(context.Background(), append(args, "--from-store", from, "--junit", j, "--markdown", m), &stdout, &stderr)
	if err != nil || code != exitViolated {
		t.Fatalf("gate --from-store %s: exit %d, %v (want %d: the two valid runs miss the expectation)\n%s%s", from, code, err, exitViolated, stdout.String(), stderr.String())
	}
	jb, err := os.ReadFile(j)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := os.ReadFile(m)
	if err != nil {
		t.Fatal(err)
	}
	norm := func(s string) string {
		s = runStamp.ReplaceAllString(s, "RUN")
		s = strings.ReplaceAll(s, from, "STORE")
		for _, st := range stores {
			s = strings.ReplaceAll(s, st, "STORE")
		}
		return s
	}
	return stdout.String(), norm(string(jb)), norm(string(mb))
}

// TestHuntListShards lists a campaign's runs whole and in three parts
// through the command: the parts are disjoint and together the whole, and
// a shard out of range is bad input.
func TestHuntListShards(t *testing.T) {
	for _, steer := range []string{"", "--steer"} {
		args := []string{"hunt", "redlock", "--runs", "4", "--list"}
		if steer != "" {
			args = append(args, steer)
		}
		code, whole, errOut := runCLI(t, args...)
		if code != exitHeld {
			t.Fatalf("%v: exit %d, %s", args, code, errOut)
		}
		want := strings.Split(strings.TrimSpace(whole), "\n")
		if len(want) < 4*5 || !strings.HasPrefix(want[0], "none 1") {
			t.Fatalf("%v listed %q: want every kind's 4 runs, the baseline first", args, want)
		}
		seen := map[string]int{}
		for i := 1; i <= 3; i++ {
			code, part, errOut := runCLI(t, append(args, "--shard", fmt.Sprintf("%d/3", i))...)
			if code != exitHeld {
				t.Fatalf("shard %d/3: exit %d, %s", i, code, errOut)
			}
			for _, l := range strings.Split(strings.TrimSpace(part), "\n") {
				seen[l]++
			}
		}
		for _, l := range want {
			if seen[l] != 1 {
				t.Errorf("%s: run %q is in %d of the 3 parts, want 1", steer, l, seen[l])
			}
		}
		if len(seen) != len(want) {
			t.Errorf("%s: the parts list %d runs, the whole %d", steer, len(seen), len(want))
		}
	}
	if code, _, errOut := runCLI(t, "hunt", "redlock", "--list", "--shard", "4/3"); code != exitUsage || !strings.Contains(errOut, "--shard") {
		t.Errorf("--shard 4/3: exit %d, %q; want %d naming --shard", code, errOut, exitUsage)
	}
}
