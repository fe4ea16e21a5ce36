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

const shrinkUsage = `Usage: jepsen-lite shrink <run dir> [--tries N] [--need K] [--confirm M] [--max-runs R] [--backend local|docker|ssh [--inventory FILE]] [--lock-command CMD]

Searches, from a stored run that failed (its verdict invalid), for a smaller
scenario that still fails: delta debugging over the fault steps the run
drew, then a shorter run, shorter steps moved earlier, fewer workers and
fewer keys. A candidate "still fails" when at least K of its N runs (the
run's seed each time) end invalid with one of the anomaly kinds the run
found, and it passes when more than N-K of them end otherwise (valid, or
invalid with other kinds); its runs stop as soon as that is decided. A run
whose verdict is unknown (its check past --check-timeout, a fault that
failed) is undecided: it counts neither as a failure nor as a pass, and a
candidate left neither failing nor passing after its N runs is undecided
and not kept; the summary counts those. The smallest scenario found is
run M more times to measure how often it fails, and written as
shrunk.yaml into the run directory: a runnable scenario whose description
says what was removed, how many runs the search took, how many candidates
were undecided and how often the shrunk case failed. The search's runs are
stored under <run dir>/shrink. With --lock-command, a run of an external
lock client is shrunk with CMD in place of the command it was stored with
(a client built anew since, at another path), and shrunk.yaml names CMD.

Exit 0 when shrunk.yaml was written, 254 when the run did not fail again
(fewer than K of N runs failed, the undecided counted), when the smallest
scenario found failed in none of its M runs (nothing is written: the
failure was too rare to shrink) or the input is bad, 2 when interrupted.

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
	backend := fs.String("backend", d.backend, backendUsage)
	inventory := fs.String("inventory", "", inventoryUsage)
	checkTimeout := fs.Duration("check-timeout", d.checkTimeout, "time budget of the checkers per run")
	lockCommand := fs.String("lock-command", "", "run the candidates against this external lock client (docs/lock-protocol.md) instead of the stored run's lock")
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
	if isSet(fs, "lock-command") && strings.TrimSpace(*lockCommand) == "" {
		return exitUsage, usagef("--lock-command: empty command")
	}
	return shrinkRun(ctx, pos[0], shrinkSettings{tries: *tries, need: *need, confirm: *confirm, maxRuns: *maxRuns, backend: *backend, inventory: *inventory, checkTimeout: *checkTimeout, lockCommand: *lockCommand}, stdout, stderr)
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
	if u := undecidedText(out); u != "" {
		fmt.Fprintf(&b, "; %s", u)
	}
	fmt.Fprintf(&b, "; this scenario %s after it (with seed %d).", confirmedText(out), sc.Seed)
	return b.String()
}

// confirmedText says how often the shrunk scenario failed in its
// confirmation runs, and how many of them were undecided (never counted as
// passes): "failed in 3 of 5 confirmation runs, 1 undecided".
func confirmedText(out *shrink.Result) string {
	s := fmt.Sprintf("failed in %d of %d confirmation runs", out.Failed, out.Confirmed)
	if out.ConfirmUndecided > 0 {
		s += fmt.Sprintf(", %d undecided", out.ConfirmUndecided)
	}
	return s
}

// undecidedText counts the search's undecided candidates and runs (their
// verdict unknown: a check out of its time budget, a fault that failed),
// none of which was kept or counted as passing: "2 of 14 candidates were
// undecided (5 runs of unknown verdict), and none was kept"; empty when
// every run was decided.
func undecidedText(out *shrink.Result) string {
	switch {
	case out.UndecidedRuns == 0:
		return ""
	case out.Candidates > 0 && out.Undecided == out.Candidates:
		return fmt.Sprintf("every candidate (%d) was undecided (%d runs of unknown verdict), so the scenario stays as given", out.Candidates, out.UndecidedRuns)
	case out.Undecided == 0:
		return fmt.Sprintf("%d of its runs had an unknown verdict, counted neither as a failure nor as a pass; no candidate was left undecided", out.UndecidedRuns)
	}
	return fmt.Sprintf("%d of %d candidates were undecided (%d runs of unknown verdict), and none was kept", out.Undecided, out.Candidates, out.UndecidedRuns)
}

// trialOutcome is what a candidate's run with results said, for a search
// whose original run found kinds: Undecided when its outcome is unknown
// (reports.Results.Undecided: a check out of its time budget, an
// interrupted check, a fault that failed, a client that never answered),
// with why; Failed when its verdict is invalid with one of kinds; Passed
// otherwise (valid, or invalid with other kinds).
func trialOutcome(r *reports.Results, kinds []string) (shrink.Outcome, string, error) {
	if why, undecided := r.Undecided(); undecided {
		return shrink.Undecided, why, nil
	}
	found := gate.AnomalyKinds(r.Checkers)
	if r.Verdict == checker.Invalid && slices.ContainsFunc(kinds, func(k string) bool { return slices.Contains(found, k) }) {
		return shrink.Failed, "", nil
	}
	return shrink.Passed, "", nil
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
	backend, inventory            string
	checkTimeout                  time.Duration
	lockCommand                   string // "": the stored run's lock
}

// defaultShrink are shrink's defaults, those of its flags.
var defaultShrink = shrinkSettings{tries: 3, need: 2, confirm: 5, maxRuns: 200, backend: "local", checkTimeout: 5 * time.Minute}

// shrinkInput loads the stored run in runDir, its lock command replaced by
// lockCommand unless that is empty, and the anomaly kinds it found; the
// error is a usage error, for a run that did not fail too.
func shrinkInput(runDir, lockCommand string) (*scenarios.Scenario, []string, error) {
	sc, err := scenarios.Load(runDir, runner.Names())
	if err != nil {
		return nil, nil, usageError{err}
	}
	if lockCommand != "" {
		if sc, err = withLockCommand(sc, lockCommand); err != nil {
			return nil, nil, err
		}
	} else if err := refuseOwnLock(sc, "lockapi.Shrink with the lock's lockapi.Lock"); err != nil {
		return nil, nil, err
	}
	res, err := reports.ReadResults(runDir)
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("%s: %w", runDir, err)}
	}
	kinds := gate.AnomalyKinds(res.Checkers)
	if res.Verdict != checker.Invalid || len(kinds) == 0 {
		return nil, nil, usagef("%s: the run's verdict is %s with no anomaly: nothing to shrink", runDir, res.Verdict)
	}
	return sc, kinds, nil
}

// shrinkRun shrinks the failing run in runDir and writes its shrunk.yaml,
// returning shrink's exit code.
func shrinkRun(ctx context.Context, runDir string, set shrinkSettings, stdout, stderr io.Writer) (int, error) {
	if resolved, err := filepath.EvalSymlinks(runDir); err == nil {
		runDir = resolved
	}
	sc, kinds, err := shrinkInput(runDir, set.lockCommand)
	if err != nil {
		return exitUsage, err
	}
	backendUsed, err := backendFor(set.backend, set.inventory)
	if err != nil {
		return exitUsage, err
	}
	if err := checkBackend(backendUsed, sc); err != nil {
		return exitUsage, err
	}
	store := filepath.Join(runDir, "shrink")
	trial := func(ctx context.Context, cand *scenarios.Scenario) (shrink.Outcome, string, error) {
		r, err := runner.Run(ctx, cand, runner.WithSeed(sc.Seed), runner.WithStore(store),
			runner.WithCheck(checker.Options{Timeout: set.checkTimeout}), runner.WithClusterBackend(backendUsed))
		if err != nil {
			return shrink.Undecided, "", err
		}
		return trialOutcome(r.Results, kinds)
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
		return exitUsage, usageError{fmt.Errorf("%s: %w (%s; %d runs in %v; the search's runs are in %s); nothing written", runDir, err, confirmedText(out), out.Runs, out.Elapsed.Round(time.Second), store)}
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
	fmt.Fprintf(stdout, "shrink: %d fault steps (was %d), %d workers (was %d), %v (was %v); %s; %d runs in %v\n",
		len(shrunk.Nemesis.Steps), len(sc.Nemesis.Steps), shrunk.Workers, sc.Workers, shrunk.Duration, sc.Duration,
		confirmedText(out), out.Runs, out.Elapsed.Round(time.Second))
	for _, c := range out.Changes {
		fmt.Fprintf(stdout, "  %s\n", c)
	}
	if u := undecidedText(out); u != "" {
		fmt.Fprintf(stdout, "shrink: %s (the first: %s)\n", u, out.FirstUnknown)
	}
	fmt.Fprintf(stdout, "shrink: wrote %s (run it: jepsen-lite run %s)\n", path, path)
	return exitHeld, nil
}
