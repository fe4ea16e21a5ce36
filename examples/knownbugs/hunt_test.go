//go:build knownbugs

package knownbugs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// The campaigns of TestHuntKnownBugs, each overridable from the
// environment: KNOWNBUGS_CAMPAIGNS campaigns per mode (random and
// steered), each of at most KNOWNBUGS_MAX_RUNS runs, and one random
// campaign of KNOWNBUGS_FIXED_RUNS runs against the fixed version;
// KNOWNBUGS_MODES=random,steered,fixed chooses which of them run, and
// KNOWNBUGS_FIRST the first campaign of each mode (1 by default; 6 runs
// campaigns 6 to KNOWNBUGS_CAMPAIGNS, with the same seeds as in a full
// run, to go on after an interrupted one).
var (
	huntCampaigns = envInt("KNOWNBUGS_CAMPAIGNS", 10)
	huntFirst     = envInt("KNOWNBUGS_FIRST", 1)
	huntMaxRuns   = envInt("KNOWNBUGS_MAX_RUNS", 30)
	huntFixedRuns = envInt("KNOWNBUGS_FIXED_RUNS", 20)
)

// huntMode reports whether the campaigns of mode (random, steered or
// fixed) run: those KNOWNBUGS_MODES lists (comma-separated), every mode
// by default.
func huntMode(mode string) bool {
	modes := os.Getenv("KNOWNBUGS_MODES")
	return modes == "" || slices.Contains(strings.Split(modes, ","), mode)
}

// minCampaigns is how many of n campaigns of each mode must find the bug
// within huntMaxRuns: eight in ten. A campaign's runs to the first finding
// are a draw with a long tail (one campaign of a bug found about one run in
// eight took 27), and the test must not fail on the tail's far end.
func minCampaigns(n int) int { return (n*8 + 9) / 10 }

// campaignSeed is the seed of campaign c: far enough apart that no two
// campaigns share a run's seed. A steered and a random campaign of the
// same c share their seeds, so their first runs are the same draw.
func campaignSeed(c int) uint64 { return 1 + 1000*uint64(c) }

// TestHuntKnownBugs hunts each bug of the corpus with `hunt`'s campaigns
// instead of the corpus test's scenario: a plain baseline of the bug's
// system, random schedules of the one fault kind the bug needs, and the
// workload drawn per run (try or wait, renewed or not, holds). Each
// campaign stops at the first run whose anomalies show the bug's
// mechanism (the same check as TestKnownBugs), and the test logs how many
// runs each campaign took, random and steered (Options.Steer), over
// huntCampaigns campaigns each. It requires minCampaigns of the random
// campaigns against the buggy version to find the bug within huntMaxRuns
// runs (the steered ones are measured against them, not required), and a
// random
// campaign of huntFixedRuns runs against the fixed version to show it in
// no more runs than the bug's fixedMax. Set KNOWNBUGS_STORE to keep the
// runs. Run one bug with -run 'TestHuntKnownBugs/<name>'; make
// hunt-knownbugs runs them all (docs/hunt.md, "Known bugs").
func TestHuntKnownBugs(t *testing.T) {
	for _, b := range bugs {
		t.Run(b.name, func(t *testing.T) {
			bin := t.TempDir()
			buggy := compile(t, b.buggy, filepath.Join(bin, "buggy"))
			fixed := compile(t, b.fixed, filepath.Join(bin, "fixed"))
			store := huntStore(t, b.name)
			taken := map[bool][]int{}
			for _, steer := range []bool{false, true} {
				if !huntMode(mode(steer)) {
					continue
				}
				for c := max(huntFirst, 1) - 1; c < huntCampaigns; c++ {
					rep, shown := huntBug(t, b, buggy, store, true, hunt.Options{Runs: huntMaxRuns, Seed: campaignSeed(c), Steer: steer})
					if rep.Stopped == "" {
						t.Logf("%s: %s campaign %d (seed %d) did not find the bug in %d runs of %s", b.name, mode(steer), c+1, campaignSeed(c), rep.Runs, b.hunt.fault)
						taken[steer] = append(taken[steer], 0)
						continue
					}
					taken[steer] = append(taken[steer], rep.StoppedAfter)
					t.Logf("%s %s campaign %d (seed %d): found after %d runs, in %s: %s", b.name, mode(steer), c+1, campaignSeed(c), rep.StoppedAfter, rep.Stopped, shown)
				}
			}
			for _, steer := range []bool{false, true} {
				if !huntMode(mode(steer)) {
					continue
				}
				t.Logf("%s buggy, %s: runs to the first finding %v (0: none in %d), mean %s", b.name, mode(steer), taken[steer], huntMaxRuns, mean(taken[steer]))
				// Random campaigns must find the bug; steering is measured
				// against them, not required to find it.
				ran := len(taken[steer])
				if found := ran - count(taken[steer], 0); !steer && found < minCampaigns(ran) {
					t.Errorf("%s (%s): %d of %d random campaigns found the bug within %d runs, want at least %d", b.name, b.ref, found, ran, huntMaxRuns, minCampaigns(ran))
				}
			}
			if !huntMode("fixed") {
				return
			}
			rep, _ := huntBug(t, b, fixed, store, false, hunt.Options{Runs: huntFixedRuns, Seed: campaignSeed(0)})
			fixedFound := 0
			for _, row := range rep.Rows {
				fixedFound += len(slices.DeleteFunc(slices.Clone(row.Failing), func(dir string) bool { return len(bugIn(t, b, dir)) == 0 }))
			}
			t.Logf("%s fixed: the bug showed in %d of %d runs of %s (%d invalid for other reasons)", b.name, fixedFound, rep.Runs, b.hunt.fault, invalid(rep)-fixedFound)
			if fixedFound > b.fixedMax {
				t.Errorf("%s (%s): the fixed version showed the bug in %d of %d hunted runs, want at most %d", b.name, b.ref, fixedFound, rep.Runs, b.fixedMax)
			}
		})
	}
}

// huntBug runs one campaign against the program command, with stop at the
// first run that shows the bug (without, as for the fixed version's
// campaign, to its end), and returns its report and what the stopping
// run showed.
func huntBug(t *testing.T, b knownBug, command, store string, stop bool, opts hunt.Options) (*hunt.Report, string) {
	t.Helper()
	base, err := scenarios.Load(b.hunt.base, runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	base.Lock.Algorithm = clients.ExecAlgorithm
	base.Lock.Options = map[string]string{clients.ExecCommandOption: command}
	base.Duration = b.hunt.limit
	opts.Faults, opts.NoBaseline = []string{b.hunt.fault}, true
	opts.Lease.SelfRenewing = b.selfRenewing
	var shown string
	if stop {
		opts.Stop = func(out hunt.Outcome) bool {
			if out.Dir == "" {
				return false
			}
			if s := bugIn(t, b, out.Dir); len(s) > 0 {
				shown = s[0]
				return true
			}
			return false
		}
	}
	opts.Log = logWriter{t}
	rep, err := runner.Hunt(interruptible(t), base, opts, runner.WithStore(store))
	if err != nil {
		t.Fatalf("%s: hunt: %v", b.name, err)
	}
	return rep, shown
}

// bugIn returns what the run in dir shows of the bug.
func bugIn(t *testing.T, b knownBug, dir string) []string {
	t.Helper()
	h, _, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := reports.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b.shows(h, res.Checkers)
}

// huntStore is where the campaigns keep their runs: KNOWNBUGS_STORE/name
// when set, else a temporary directory kept only when the test fails.
func huntStore(t *testing.T, name string) string {
	t.Helper()
	if dir := os.Getenv("KNOWNBUGS_STORE"); dir != "" {
		return filepath.Join(dir, name)
	}
	return keptOnFailure(t, "knownbugs-hunt-"+name+"-")
}

// count is how many of xs are x.
func count(xs []int, x int) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

func invalid(rep *hunt.Report) int {
	n := 0
	for _, row := range rep.Rows {
		n += row.Invalid
	}
	return n
}

func mode(steer bool) string {
	if steer {
		return "steered"
	}
	return "random"
}

// mean is the mean of the runs that found the bug, with how many did not.
func mean(taken []int) string {
	sum, n := 0, 0
	for _, r := range taken {
		if r > 0 {
			sum, n = sum+r, n+1
		}
	}
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f over %d campaigns that found it", float64(sum)/float64(n), n)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// logWriter sends a campaign's log lines to the test's log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
