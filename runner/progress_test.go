package runner_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/runner"
)

// TestProgressGoesThroughThePhases runs a short scenario with a progress
// callback: it is told each phase once, in order, with snapshots of the
// running workload in between whose counts only grow, and the counts it
// is told when checking are those of the stored results.
func TestProgressGoesThroughThePhases(t *testing.T) {
	sc := load(t, "redis-single-baseline")
	var got []runner.Progress
	res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1),
		runner.WithTimeLimit(time.Second), runner.WithProgress(func(p runner.Progress) { got = append(got, p) }))
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, p := range got {
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
	}
	want := []string{runner.PhaseStarting, runner.PhaseRunning, runner.PhaseStopping, runner.PhaseChecking, runner.PhaseReporting}
	if !slices.Equal(phases, want) {
		t.Fatalf("phases %q, want %q", phases, want)
	}
	var last runner.Progress
	for _, p := range got {
		if p.Phase != runner.PhaseRunning {
			continue
		}
		if p.Total != time.Second+sc.Quiet || p.Ops < last.Ops || p.Elapsed < last.Elapsed {
			t.Fatalf("running snapshot %+v after %+v: want a total of %v and counts that only grow", p, last, time.Second+sc.Quiet)
		}
		last = p
	}
	checking := got[slices.IndexFunc(got, func(p runner.Progress) bool { return p.Phase == runner.PhaseChecking })]
	st := res.Results.Stats
	if checking.Ops != int64(st.Ops) || checking.OK != int64(st.OK) || checking.Fail != int64(st.Fail) || checking.Inf != int64(st.Info) {
		t.Fatalf("checking with %+v, want the counts of the results, %+v", checking, st)
	}
}
