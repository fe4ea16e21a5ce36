package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/datasheet"
	"github.com/jepsen-lite/jepsen-lite/gate"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
	"github.com/jepsen-lite/jepsen-lite/shrink"
)

const shrinkUsage = `Usage: jepsen-lite shrink <run dir> [--tries N] [--need K] [--confirm M] [--max-runs R] [--backend local|docker]

Searches, from a stored run that failed (its verdict invalid), for a smaller
scenario that still fails: delta debugging over the fault steps the run
drew, then a shorter run, shorter steps moved earlier, fewer workers and
fewer keys. A candidate "still fails" when at least K of its N runs (the
run's seed each time) end invalid with one of the anomaly kinds the run
found; its runs stop as soon as that is decided. The smallest scenario found
is run M more times to measure how often it fails, and written as
shrunk.yaml into the run directory: a runnable scenario whose description
says what was removed, how many runs the search took and how often the
shrunk case failed. The search's runs are stored under <run dir>/shrink.

Exit 0 when shrunk.yaml was written, 254 when the run did not fail, when
the smallest scenario found failed in none of its M runs (nothing is
written: the failure was too rare to shrink) or the input is bad, 2 when
interrupted.

Examples:
  jepsen-lite shrink store/latest
  jepsen-lite shrink store/redlock-gc-pause/20261127T080000.000Z --tries 5 --need 3`

func shrinkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("shrink", shrinkUsage, stderr)
	d := defaultShrink
	tries := fs.Int("tries", d.tries, "n: runs of each candidate at most")
	need := fs.Int("need", d.need, "k: a candidate still fails when k of its n runs fail")
	confirm := fs.Int("confirm", d.confirm, "runs of the shrunk scenario that measure how often it fails")
	maxRuns := fs.Int("max-runs", d.maxRuns, "the search's budget of runs")
	backend := fs.String("backend", d.backend, "where the servers run: local or docker")
	checkTimeout := fs.Duration("check-timeout", d.checkTimeout, "time budget of the checkers per run")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelp) {
		return exitHeld, nil
	}
	if err != nil {
		return exitUsage, err
	}
	if len(pos) != 1 {
		return exitUsage, usagef("want exactly one run directory")
	}
	if *tries < 1 || *need < 1 || *need > *tries || *confirm < 1 || *maxRuns < 1 {
		return exitUsage, usagef("want 1 <= --need <= --tries, --confirm >= 1 and --max-runs >= 1")
	}
	for _, f := range []struct {
		flag string
		v    int
	}{{"tries", *tries}, {"confirm", *confirm}, {"max-runs", *maxRuns}} {
		if err := checkCount(f.flag, f.v, 1, maxRunCount); err != nil {
			return exitUsage, err
		}
	}
	return shrinkRun(ctx, pos[0], shrinkSettings{tries: *tries, need: *need, confirm: *confirm, maxRuns: *maxRuns, backend: *backend, checkTimeout: *checkTimeout}, stdout, stderr)
}

// shrunkDescription is the description of the scenario shrunk from the
// run in runDir of sc, which found kinds: what the search removed or made
// smaller, how it judged and how long it took, and how often the shrunk
// scenario failed.
func shrunkDescription(runDir string, sc *scenarios.Scenario, kinds []string, out *shrink.Result, set shrinkSettings) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Shrunk by `jepsen-lite shrink` from the run %s (%s, seed %d, which found %s): ",
		runDir, sc.Name, sc.Seed, strings.Join(kinds, ","))
	changes := out.Changes
	if len(changes) > describedChanges {
		changes = append(slices.Clone(changes[:describedChanges]), fmt.Sprintf("and %d more changes (shrink's output lists each)", len(out.Changes)-describedChanges))
	}
	if len(changes) == 0 {
		b.WriteString("nothing could be removed.")
	} else {
		b.WriteString(strings.Join(changes, "; ") + ".")
	}
	fmt.Fprintf(&b, " A candidate still failed when %d of its %d runs ended invalid with one of those kinds. The search took %d runs in %v",
		set.need, set.tries, out.Runs, out.Elapsed.Round(time.Second))
	if out.Exhausted {
		fmt.Fprintf(&b, " and stopped at its budget of %d runs", set.maxRuns)
	}
	fmt.Fprintf(&b, "; this scenario failed in %d of %d runs after it (with seed %d).", out.Failed, out.Confirmed, sc.Seed)
	return b.String()
}

// describedChanges is the most changes of a search that a shrunk
// scenario's description lists one by one; it counts the rest, so that the
// description, one line of shrunk.yaml, stays readable and well within
// scenarios.MaxLineLength.
const describedChanges = 20

// shrinkSettings are a shrink's settings: its flags, which hunt --shrink
// gives their defaults.
type shrinkSettings struct {
	tries, need, confirm, maxRuns int
	backend                       string
	checkTimeout                  time.Duration
}

// defaultShrink are shrink's defaults, those of its flags.
var defaultShrink = shrinkSettings{tries: 3, need: 2, confirm: 5, maxRuns: 200, backend: "local", checkTimeout: 5 * time.Minute}

// shrinkRun shrinks the failing run in runDir and writes its shrunk.yaml,
// returning shrink's exit code.
func shrinkRun(ctx context.Context, runDir string, set shrinkSettings, stdout, stderr io.Writer) (int, error) {
	if resolved, err := filepath.EvalSymlinks(runDir); err == nil {
		runDir = resolved
	}
	sc, err := scenarios.Load(runDir, runner.Names())
	if err != nil {
		return exitUsage, usageError{err}
	}
	res, err := reports.ReadResults(runDir)
	if err != nil {
		return exitUsage, usageError{fmt.Errorf("%s: %w", runDir, err)}
	}
	kinds := gate.AnomalyKinds(res.Checkers)
	if res.Verdict != checker.Invalid || len(kinds) == 0 {
		return exitUsage, usagef("%s: the run's verdict is %s with no anomaly: nothing to shrink", runDir, res.Verdict)
	}
	backendUsed, err := backendFor(set.backend)
	if err != nil {
		return exitUsage, err
	}
	if err := checkBackend(backendUsed, sc); err != nil {
		return exitUsage, err
	}
	store := filepath.Join(runDir, "shrink")
	trial := func(ctx context.Context, cand *scenarios.Scenario) (bool, error) {
		r, err := runner.Run(ctx, cand, runner.WithSeed(sc.Seed), runner.WithStore(store),
			runner.WithCheck(checker.Options{Timeout: set.checkTimeout}), runner.WithClusterBackend(backendUsed))
		if err != nil {
			return false, err
		}
		if r.Results.FaultsFailed() || r.Results.Verdict != checker.Invalid {
			return false, nil
		}
		found := gate.AnomalyKinds(r.Results.Checkers)
		return slices.ContainsFunc(kinds, func(k string) bool { return slices.Contains(found, k) }), nil
	}
	validate := func(c *scenarios.Scenario) (*scenarios.Scenario, error) {
		b, err := scenarios.Marshal(c)
		if err != nil {
			return nil, err
		}
		return scenarios.Parse(b, "candidate", runner.Names())
	}
	fmt.Fprintf(stderr, "shrink: %s: %d fault steps, %d workers, %v; failing means invalid with one of %s, in %d of %d runs\n",
		runDir, len(sc.Nemesis.Steps), sc.Workers, sc.Duration, strings.Join(kinds, ","), set.need, set.tries)
	out, err := shrink.Shrink(ctx, sc, trial, shrink.Options{Tries: set.tries, Need: set.need, Confirm: set.confirm, MaxRuns: set.maxRuns, Validate: validate, Log: stderr})
	switch {
	case errors.Is(err, runner.ErrInterrupted) || (err != nil && ctx.Err() != nil):
		fmt.Fprintf(stderr, "jepsen-lite shrink: interrupted; the runs so far are in %s\n", store)
		return exitUnknown, nil
	case errors.Is(err, shrink.ErrDoesNotFail):
		return exitUsage, usageError{fmt.Errorf("%s: %w", runDir, err)}
	case errors.Is(err, shrink.ErrNotConfirmed):
		return exitUsage, usageError{fmt.Errorf("%s: %w (%d runs in %v; the search's runs are in %s); nothing written", runDir, err, out.Runs, out.Elapsed.Round(time.Second), store)}
	case err != nil:
		return exitInternal, err
	}
	shrunk := out.Scenario
	shrunk.Name = sc.Name + "-shrunk"
	shrunk.Tags = slices.DeleteFunc(slices.Clone(shrunk.Tags), func(t string) bool { return t == "quick" || t == "random" })
	shrunk.Tags = append(shrunk.Tags, "shrunk")
	shrunk.Expect = checker.Expectation{Verdict: checker.Invalid}
	shrunk.Description = shrunkDescription(runDir, sc, kinds, out, set)
	yml, err := scenarios.Marshal(shrunk)
	if err != nil {
		return exitInternal, err
	}
	path := filepath.Join(runDir, datasheet.ShrunkFile)
	if err := os.WriteFile(path, yml, 0o644); err != nil {
		return exitInternal, err
	}
	fmt.Fprintf(stdout, "shrink: %d fault steps (was %d), %d workers (was %d), %v (was %v); failed in %d of %d runs; %d runs in %v\n",
		len(shrunk.Nemesis.Steps), len(sc.Nemesis.Steps), shrunk.Workers, sc.Workers, shrunk.Duration, sc.Duration,
		out.Failed, out.Confirmed, out.Runs, out.Elapsed.Round(time.Second))
	for _, c := range out.Changes {
		fmt.Fprintf(stdout, "  %s\n", c)
	}
	fmt.Fprintf(stdout, "shrink: wrote %s (run it: jepsen-lite run %s)\n", path, path)
	return exitHeld, nil
}
