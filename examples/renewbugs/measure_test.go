//go:build renewbugs

package renewbugs

import (
	"cmp"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/hunt"
)

// The measurement of TestMeasureRenewBugs, each overridable from the
// environment: the modes of RENEWBUGS_MODES (random, steered and fixed,
// comma-separated; all three by default), RENEWBUGS_CAMPAIGNS campaigns
// per mode, each of at most RENEWBUGS_MAX_RUNS runs, and
// RENEWBUGS_FIXED_RUNS runs of the corrected twin.
var (
	measureModes     = envModes("RENEWBUGS_MODES")
	measureCampaigns = envInt("RENEWBUGS_CAMPAIGNS", 10)
	measureMaxRuns   = envInt("RENEWBUGS_MAX_RUNS", 50)
	measureFixedRuns = envInt("RENEWBUGS_FIXED_RUNS", 20)
)

// campaignSeed is the seed of campaign c, drawn blind: far enough apart
// that no two campaigns share a run's seed; a steered and a random
// campaign of the same c share their seeds, so their first runs are the
// same draw.
func campaignSeed(c int) uint64 { return 1 + 1000*uint64(c) }

// TestMeasureRenewBugs measures how many runs the hunt takes to find each
// planted bug from the plain Redis baseline: measureCampaigns random and
// as many steered campaigns of the bug's fault kind, each to its first
// invalid run or measureMaxRuns runs, logging the runs each took (0: none
// found) and a line per bug and mode; then measureFixedRuns runs of the
// corrected twin, which must all hold. make hunt-renewbugs runs it
// (docs/hunt.md, "Renewal bugs"); one bug with -run
// 'TestMeasureRenewBugs/<name>'.
func TestMeasureRenewBugs(t *testing.T) {
	for _, b := range bugs {
		t.Run(b.name, func(t *testing.T) {
			for _, steer := range []bool{false, true} {
				if !measureModes[mode(steer)] {
					continue
				}
				var taken []string
				for c := range measureCampaigns {
					rep := huntLock(t, b, b.buggy, hunt.Options{Runs: measureMaxRuns, Seed: campaignSeed(c), Steer: steer}, true)
					n := 0
					if rep.Stopped != "" {
						n = rep.StoppedAfter
					}
					taken = append(taken, strconv.Itoa(n))
					if n > 0 {
						t.Logf("%s %s campaign %d (seed %d): %d runs to the first finding", b.name, mode(steer), c+1, campaignSeed(c), n)
					} else {
						t.Logf("%s %s campaign %d (seed %d): no finding in %d runs", b.name, mode(steer), c+1, campaignSeed(c), rep.Runs)
					}
				}
				t.Logf("%s buggy, %s: runs to the first finding %s (0: none in %d)", b.name, mode(steer), strings.Join(taken, ", "), measureMaxRuns)
			}
			if !measureModes["fixed"] {
				return
			}
			twin := huntLock(t, b, b.fixed, hunt.Options{Runs: measureFixedRuns, Seed: campaignSeed(0)}, false)
			t.Logf("%s fixed: %d runs, %d decided, %d invalid", b.name, twin.Runs, twin.Decided(), invalidRuns(twin))
			if twin.Found() {
				t.Errorf("%s's corrected twin was found invalid: %v", b.name, findings(twin))
			}
		})
	}
}

func mode(steer bool) string {
	if steer {
		return "steered"
	}
	return "random"
}

func invalidRuns(rep *hunt.Report) int {
	n := 0
	for _, row := range rep.Rows {
		n += row.Invalid
	}
	return n
}

// envModes is the set of modes the environment variable name lists, or
// every mode when it is empty.
func envModes(name string) map[string]bool {
	modes := map[string]bool{}
	for m := range strings.SplitSeq(cmp.Or(os.Getenv(name), "random,steered,fixed"), ",") {
		modes[strings.TrimSpace(m)] = true
	}
	return modes
}

// envInt is the environment variable name as a positive number, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	if v := os.Getenv(name); v != "" {
		fmt.Fprintf(os.Stderr, "%s=%q is not a positive number; %d\n", name, v, def)
	}
	return def
}
