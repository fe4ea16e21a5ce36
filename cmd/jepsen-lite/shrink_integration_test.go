//go:build shrink

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/datasheet"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestShrinkRandomPauses (make test-shrink, against a real Redis) runs
// redis-single-random-pauses until a seed fails, shrinks that run, and
// requires a shrunk.yaml of at most two fault steps that fails again when
// run.
func TestShrinkRandomPauses(t *testing.T) {
	ctx := context.Background()
	sc, err := scenarios.Load("redis-single-random-pauses", runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	var failed string
	for seed := uint64(1); seed <= 5 && failed == ""; seed++ {
		res, err := runner.Run(ctx, sc, runner.WithSeed(seed), runner.WithStore(store))
		if err != nil {
			t.Fatal(err)
		}
		if res.Results.Verdict == checker.Invalid {
			failed = res.Dir
		}
	}
	if failed == "" {
		t.Fatal("no seed of 1..5 failed: nothing to shrink")
	}
	var stdout, stderr bytes.Buffer
	code, err := shrinkCmd(ctx, []string{failed}, &stdout, &stderr)
	if err != nil || code != exitHeld {
		t.Fatalf("shrink %s: exit %d, %v\n%s%s", failed, code, err, stdout.String(), stderr.String())
	}
	t.Log(stdout.String())
	shrunk, err := scenarios.Load(filepath.Join(failed, datasheet.ShrunkFile), runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(shrunk.Nemesis.Steps); n > 2 || n == 0 {
		t.Errorf("the shrunk scenario has %d fault steps, want 1 or 2", n)
	}
	res, err := runner.Run(ctx, shrunk, runner.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	if res.Results.Verdict != checker.Invalid {
		b, _ := os.ReadFile(filepath.Join(failed, datasheet.ShrunkFile))
		t.Errorf("the shrunk scenario's run is %s, want invalid:\n%s", res.Results.Verdict, b)
	}
}
