package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
	"github.com/jepsen-lite/jepsen-lite/shrink"
)

// refusalHangBound is how long a refusal of bad input may take before the test
// calls it a hang; it is no measure of speed.
const refusalHangBound = 60 * time.Second

// runRefused runs the binary with args, killing it past refusalHangBound, and
// returns its exit code and its stderr.
func runRefused(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), refusalHangBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v did not end within %v: it hangs", args, refusalHangBound)
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// manySteps writes a scenario file of n scripted steps, one a line, into
// dir.
func manySteps(t *testing.T, dir string, n int) string {
	var b strings.Builder
	b.WriteString("name: many-steps\nsystem: {name: redis, nodes: 3}\nlock: {algorithm: redis-single, ttl: 1s}\nworkers: 2\nduration: 1h\nnemesis:\n  steps:\n")
	for i := range n {
		fmt.Fprintf(&b, "    - {at: %dms, fault: kill, targets: [n%d]}\n", i, 1+i%3)
	}
	path := filepath.Join(dir, fmt.Sprintf("steps-%d.yaml", n))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRefusedPastBounds runs every command that takes a scenario, and
// every flag that takes a size, with a value past its bound: each exits
// 254 with one line naming the file and line, and the field or the flag,
// before anything starts (no store is written).
func TestRefusedPastBounds(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	tiny := "testdata/random-interval-1ns.yaml"
	runDir := filepath.Join(dir, "run")
	data, err := os.ReadFile(tiny)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "scenario.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	interval := []string{":13: nemesis.random.interval: must be at least 2ms"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"run with a random interval of 1ns", []string{"run", tiny}, append(interval, tiny)},
		{"gate with a random interval of 1ns", []string{"gate", tiny}, append(interval, tiny)},
		{"hunt with a random interval of 1ns", []string{"hunt", tiny}, append(interval, tiny)},
		{"a replay with a random interval of 1ns", []string{"run", "--replay", runDir}, append(interval, "scenario.yaml")},
		{"shrink with a random interval of 1ns", []string{"shrink", runDir}, append(interval, "scenario.yaml")},
		{"a million steps", []string{"run", manySteps(t, dir, 1_000_000)}, []string{"steps-1000000.yaml: the file is larger than 2 MiB"}},
		{"a step past the bound", []string{"run", manySteps(t, dir, nemesis.MaxSteps+1)}, []string{fmt.Sprintf("steps-%d.yaml:7: nemesis.steps: %d steps", nemesis.MaxSteps+1, nemesis.MaxSteps+1)}},
		{"run --workers", []string{"run", "redis-single-baseline", "--workers", fmt.Sprint(scenarios.MaxWorkers + 1)}, []string{fmt.Sprintf("--workers %d", scenarios.MaxWorkers+1)}},
		{"run --time-limit", []string{"run", "redis-single-baseline", "--time-limit", "25h"}, []string{"--time-limit 25h0m0s"}},
		{"hunt --time-limit", []string{"hunt", "redis-single", "--time-limit", "-1s"}, []string{"--time-limit -1s"}},
		{"hunt --workers", []string{"hunt", "redis-single", "--workers", "100000"}, []string{"--workers 100000"}},
		{"hunt --runs", []string{"hunt", "redis-single", "--runs", fmt.Sprint(maxRunCount + 1)}, []string{fmt.Sprintf("--runs %d", maxRunCount+1)}},
		{"gate --seeds", []string{"gate", "redis-single-baseline", "--seeds", fmt.Sprint(maxRunCount + 1)}, []string{fmt.Sprintf("--seeds %d", maxRunCount+1)}},
		{"gate --parallel", []string{"gate", "redis-single-baseline", "--parallel", fmt.Sprint(maxParallel + 1)}, []string{fmt.Sprintf("--parallel %d", maxParallel+1)}},
		{"shrink --max-runs", []string{"shrink", runDir, "--max-runs", fmt.Sprint(maxRunCount + 1)}, []string{fmt.Sprintf("--max-runs %d", maxRunCount+1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args[0] != "shrink" { // shrink stores under its run directory
				args = append(args, "--store", store)
			}
			code, stderr := runRefused(t, args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
			if lines := strings.Count(strings.TrimSpace(stderr), "\n") + 1; lines != 1 {
				t.Errorf("%d lines on stderr, want one:\n%s", lines, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused input left a store (%v)", err)
			}
		})
	}
}

// TestUsageBoundsTable requires the table of bounds of docs/usage.md's
// "Scenarios", between its "bounds" marks, to state the bounds the code
// declares.
func TestUsageBoundsTable(t *testing.T) {
	rows := []struct{ what, bound, constant string }{
		{"a scenario file", fmt.Sprintf("at most %d MiB", scenarios.MaxFileSize>>20), "`scenarios.MaxFileSize`"},
		{"a line of a scenario file", fmt.Sprintf("at most %d KiB", scenarios.MaxLineLength>>10), "`scenarios.MaxLineLength`"},
		{"`workers`, `--workers`", fmt.Sprintf("at most %d", scenarios.MaxWorkers), "`scenarios.MaxWorkers`"},
		{"`lock.keys`", fmt.Sprintf("at most %d", scenarios.MaxKeys), "`scenarios.MaxKeys`"},
		{"`system.nodes`", fmt.Sprintf("at most %d", scenarios.MaxNodes), "`scenarios.MaxNodes`"},
		{"every duration: `duration`, `--time-limit`, `quiet`, `think`, `hold`, the lock's `ttl`, `drift`, `renew`, `wait`, the reaper's, each step's `at`, `duration`, `offset` (its size) and duration options, the random spec's",
			fmt.Sprintf("at most %v", scenarios.MaxDuration), "`scenarios.MaxDuration`"},
		{"`queue.tasks`, `queue.limit`", fmt.Sprintf("at most %d", scenarios.MaxQueueTasks), "`scenarios.MaxQueueTasks`"},
		{"`queue.budget`", fmt.Sprintf("at most %d", scenarios.MaxQueueBudget), "`scenarios.MaxQueueBudget`"},
		{"the fault steps: those scripted and those the random spec can draw over the run", fmt.Sprintf("at most %d", nemesis.MaxSteps), "`nemesis.MaxSteps`"},
		{"`nemesis.random.interval`", fmt.Sprintf("at least %v", nemesis.MinInterval), "`nemesis.MinInterval`"},
		{"`nemesis.random.min-duration`, `max-duration`", fmt.Sprintf("left out, or at least %v", nemesis.Resolution), "`nemesis.Resolution`"},
		{"`gate --seeds`, `hunt --runs`, `shrink --tries`, `--confirm`, `--max-runs`", fmt.Sprintf("at most %d", maxRunCount), "`maxRunCount` (cmd/jepsen-lite)"},
		{"`gate --parallel`", fmt.Sprintf("at most %d", maxParallel), "`maxParallel` (cmd/jepsen-lite)"},
	}
	if scenarios.MaxFileSize%(1<<20) != 0 || scenarios.MaxLineLength%(1<<10) != 0 {
		t.Fatalf("MaxFileSize %d, MaxLineLength %d: the table writes them in whole MiB and KiB", scenarios.MaxFileSize, scenarios.MaxLineLength)
	}
	var want strings.Builder
	want.WriteString("<!-- bounds -->\n| what | bound | constant |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&want, "| %s | %s | %s |\n", r.what, r.bound, r.constant)
	}
	want.WriteString("<!-- /bounds -->")
	usage, err := os.ReadFile("../../docs/usage.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(usage)
	begin, end := strings.Index(text, "<!-- bounds -->"), strings.Index(text, "<!-- /bounds -->")
	if begin < 0 || end < begin {
		t.Fatalf("docs/usage.md has no table between %q and %q; want\n%s", "<!-- bounds -->", "<!-- /bounds -->", want.String())
	}
	if got := text[begin : end+len("<!-- /bounds -->")]; got != want.String() {
		t.Fatalf("docs/usage.md's table of bounds is\n%s\nwant\n%s", got, want.String())
	}
}

// TestShrunkDescriptionStaysOneReadableLine shrinks, on paper, a schedule
// of nemesis.MaxSteps steps to one: the description of shrunk.yaml lists
// the first changes and counts the rest, so that the file, which the store
// writes with the description on one line, is read back by run.
func TestShrunkDescriptionStaysOneReadableLine(t *testing.T) {
	sc, err := scenarios.Load("redis-single-random-pauses", runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	out := &shrink.Result{Scenario: sc, Runs: 200, Failed: 3, Confirmed: 5, Exhausted: true}
	for i := range nemesis.MaxSteps - 1 {
		out.Changes = append(out.Changes, fmt.Sprintf("removed step %d (at %dms client-pause one for 2.5s point=before-write isolate=true)", i+2, 1000+i))
	}
	desc := shrunkDescription("store/x/1", sc, []string{"stale-write"}, out, defaultShrink)
	if want := fmt.Sprintf("; and %d more changes (shrink's output lists each).", len(out.Changes)-describedChanges); !strings.Contains(desc, want) {
		t.Fatalf("the description does not say %q:\n%s", want, desc)
	}
	shrunk := *sc
	shrunk.Description = desc
	data, err := scenarios.Marshal(&shrunk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenarios.Parse(data, "shrunk.yaml", runner.Names()); err != nil {
		t.Fatalf("shrunk.yaml does not parse: %v", err)
	}
}
