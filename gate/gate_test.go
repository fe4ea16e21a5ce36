package gate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// twoScenarios returns two built-in scenarios for gates with fake runs.
func twoScenarios(t *testing.T) []*scenarios.Scenario {
	t.Helper()
	var out []*scenarios.Scenario
	for _, name := range []string{"redis-failover-async", "redlock-baseline"} {
		sc, err := scenarios.Load(name, runner.Names())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sc)
	}
	return out
}

// fakeRun is a run that takes longer the earlier its pair comes, so that
// runs side by side finish in the reverse of the gate's order; seed 2 of
// the first scenario misses its expectation.
func fakeRun(first *scenarios.Scenario) RunFunc {
	return func(ctx context.Context, sc *scenarios.Scenario, seed int) (*runner.Result, error) {
		wait := time.Duration(4-seed) * 20 * time.Millisecond
		if sc == first {
			wait += 60 * time.Millisecond
		}
		time.Sleep(wait)
		met := !(sc == first && seed == 2)
		return &runner.Result{Dir: fmt.Sprintf("store/%s/%d", sc.Name, seed), Elapsed: time.Second,
			Results: &reports.Results{Seed: uint64(seed), Verdict: checker.Valid, ExpectationMet: met}}, nil
	}
}

// TestRunTakesOutcomesInTheGatesOrder runs six fake pairs one at a time
// and three side by side: the table and the JUnit file are the same, the
// JUnit cases in the gate's order, and the gate did not hold.
func TestRunTakesOutcomesInTheGatesOrder(t *testing.T) {
	scs := twoScenarios(t)
	run := func(parallel int) (string, string) {
		t.Helper()
		junit := filepath.Join(t.TempDir(), "gate.xml")
		var stdout bytes.Buffer
		out, err := Run(context.Background(), Options{Selected: scs, Seeds: 3, Parallel: parallel, JUnit: junit, Run: fakeRun(scs[0])}, &stdout)
		if err != nil || out != Violated {
			t.Fatalf("--parallel %d: %v, %v; want Violated", parallel, out, err)
		}
		b, err := os.ReadFile(junit)
		if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), string(b)
	}
	t1, j1 := run(1)
	t3, j3 := run(3)
	if t1 != t3 || j1 != j3 {
		t.Errorf("side by side differs from one at a time:\n%s\n%s\nwant\n%s\n%s", t3, j3, t1, j1)
	}
	if !strings.Contains(t1, "2/3") || !strings.Contains(t1, "3/3") || !strings.Contains(t1, "gate: SOME EXPECTATIONS DID NOT HOLD") {
		t.Errorf("table:\n%s", t1)
	}
	last := -1
	for _, sc := range scs {
		for seed := 1; seed <= 3; seed++ {
			at := strings.Index(j1, fmt.Sprintf("store/%s/%d", sc.Name, seed))
			if at < last {
				t.Errorf("JUnit: %s seed %d is not in the gate's order:\n%s", sc.Name, seed, j1)
			}
			last = at
		}
	}
}

// TestRunStopsAtAnInterruptedRun: after a run cut short by Ctrl-C (its
// context ended), the gate starts no other run and ends Interrupted,
// without its closing line.
func TestRunStopsAtAnInterruptedRun(t *testing.T) {
	scs := twoScenarios(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var started atomic.Int32
	interrupted := func(ctx context.Context, sc *scenarios.Scenario, seed int) (*runner.Result, error) {
		if started.Add(1) == 2 {
			cancel()
			return nil, fmt.Errorf("running %s: %w", sc.Name, runner.ErrInterrupted)
		}
		return &runner.Result{Results: &reports.Results{Verdict: checker.Valid, ExpectationMet: true}}, nil
	}
	var stdout bytes.Buffer
	out, err := Run(ctx, Options{Selected: scs, Seeds: 3, Parallel: 1, Run: interrupted}, &stdout)
	if err != nil || out != Interrupted {
		t.Fatalf("%v, %v; want Interrupted", out, err)
	}
	if n := started.Load(); n != 2 {
		t.Errorf("%d runs started, want 2", n)
	}
	if strings.Contains(stdout.String(), "gate: ") {
		t.Errorf("an interrupted gate printed a closing line:\n%s", stdout.String())
	}
}

// TestRunListsAndSkipsEmptyShards: --list prints the pairs and runs
// nothing; a shard that holds no pair says so and holds.
func TestRunListsAndSkipsEmptyShards(t *testing.T) {
	scs := twoScenarios(t)[:1]
	never := func(context.Context, *scenarios.Scenario, int) (*runner.Result, error) {
		t.Error("a run started")
		return nil, nil
	}
	var stdout bytes.Buffer
	if out, err := Run(context.Background(), Options{Selected: scs, Seeds: 2, List: true, Run: never}, &stdout); err != nil || out != Held {
		t.Fatalf("--list: %v, %v", out, err)
	}
	if want := "redis-failover-async 1\nredis-failover-async 2\n"; stdout.String() != want {
		t.Errorf("--list printed %q, want %q", stdout.String(), want)
	}
	stdout.Reset()
	if out, err := Run(context.Background(), Options{Selected: scs, Seeds: 1, Shard: Shard{2, 2}, Run: never}, &stdout); err != nil || out != Held {
		t.Fatalf("an empty shard: %v, %v", out, err)
	}
	if want := "gate: shard 2/2 holds none of the 1 runs\n"; stdout.String() != want {
		t.Errorf("an empty shard printed %q, want %q", stdout.String(), want)
	}
}
