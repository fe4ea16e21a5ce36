package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

func TestParseShard(t *testing.T) {
	tests := []struct {
		in   string
		want shard
		bad  bool
	}{
		{in: "", want: shard{}},
		{in: "1/1", want: shard{1, 1}},
		{in: "2/4", want: shard{2, 4}},
		{in: "0/4", bad: true},
		{in: "5/4", bad: true},
		{in: "1/0", bad: true},
		{in: "2", bad: true},
		{in: "a/b", bad: true},
		{in: "-1/2", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseShard(tt.in)
			if (err != nil) != tt.bad || (!tt.bad && got != tt.want) {
				t.Fatalf("parseShard(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.bad)
			}
		})
	}
}

// TestShardSplitCoversEveryPairOnce splits the whole catalog over three
// seeds into 1 to 7 parts: the parts are disjoint, together they are the
// whole in the gate's order, the same arguments give the same parts, and no
// part expects to take longer than another by more than its longest run.
func TestShardSplitCoversEveryPairOnce(t *testing.T) {
	cat, err := scenarios.Catalog(runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	const seeds = 3
	whole := shard{}.split(cat, seeds)
	if len(whole) != len(cat)*seeds {
		t.Fatalf("the whole has %d pairs, want %d", len(whole), len(cat)*seeds)
	}
	var longest time.Duration
	for _, sc := range cat {
		longest = max(longest, expectedTime(sc))
	}
	for n := 1; n <= 7; n++ {
		t.Run(fmt.Sprintf("%d parts", n), func(t *testing.T) {
			seen := map[gatePair]int{}
			var loads []time.Duration
			for i := 1; i <= n; i++ {
				part := shard{i, n}.split(cat, seeds)
				if again := (shard{i, n}).split(cat, seeds); !slices.Equal(part, again) {
					t.Fatalf("part %d/%d differs between two calls", i, n)
				}
				var load time.Duration
				for _, p := range part {
					seen[p]++
					load += expectedTime(p.sc)
				}
				loads = append(loads, load)
				// Within a part, the gate's order.
				pos := func(p gatePair) int { return slices.Index(whole, p) }
				if !slices.IsSortedFunc(part, func(a, b gatePair) int { return pos(a) - pos(b) }) {
					t.Errorf("part %d/%d is not in the gate's order", i, n)
				}
			}
			for _, p := range whole {
				if seen[p] != 1 {
					t.Errorf("%s seed %d is in %d parts, want 1", p.sc.Name, p.seed, seen[p])
				}
			}
			if d := slices.Max(loads) - slices.Min(loads); d > longest {
				t.Errorf("parts' expected times %v differ by %v, more than the longest run %v", loads, d, longest)
			}
		})
	}
}

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
	put := func(store string, seed int, stamp time.Time) {
		dir := filepath.Join(store, name, stamp.Format(reports.RunDirTimestampFormat)+"-x")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
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
		results := fmt.Sprintf(`{"scenario":%q,"seed":%d,"verdict":"valid","checkers":[],"stats":{}}`+"\n", name, seed)
		for f, text := range map[string]string{reports.ScenarioFile: string(yml), reports.HistoryFile: hist, reports.ResultsFile: results} {
			path := filepath.Join(dir, f)
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			end := stamp.Add(10 * time.Second)
			if err := os.Chtimes(path, end, end); err != nil {
				t.Fatal(err)
			}
		}
	}
	for seed := 1; seed <= seeds; seed++ {
		put(whole, seed, began.Add(time.Duration(seed)*time.Minute))
	}
	placed := 0
	for i, store := range parts {
		// Each machine runs its part from the start, the second a second
		// earlier than the first: the runs' times do not follow their seeds.
		for k, p := range (shard{i + 1, len(parts)}).split([]*scenarios.Scenario{sc}, seeds) {
			put(store, p.seed, began.Add(time.Duration(k+1)*time.Minute-time.Duration(i)*time.Second))
			placed++
		}
	}
	if placed != seeds {
		t.Fatalf("the parts hold %d runs, want %d", placed, seeds)
	}
	gate := func(from, tag string, extra ...string) (table, junit, md string) {
		t.Helper()
		out := filepath.Join(root, "out-"+tag)
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		j, m := filepath.Join(out, "gate.xml"), filepath.Join(out, "scenarios.md")
		var stdout, stderr bytes.Buffer
		code, err := gateCmd(context.Background(), append([]string{name, "--seeds", fmt.Sprint(seeds), "--from-store", from, "--junit", j, "--markdown", m}, extra...), &stdout, &stderr)
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
		// Run directories differ by their store and start time alone.
		norm := func(s string) string {
			s = runStamp.ReplaceAllString(s, "RUN")
			s = strings.ReplaceAll(s, from, "STORE")
			for _, st := range append(parts, whole) {
				s = strings.ReplaceAll(s, st, "STORE")
			}
			return s
		}
		return stdout.String(), norm(string(jb)), norm(string(mb))
	}
	t1, j1, m1 := gate(whole, "whole")
	t2, j2, m2 := gate(strings.Join(parts, ","), "merged")
	t3, j3, m3 := gate(whole, "parallel", "--parallel", "3")
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
