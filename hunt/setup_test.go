package hunt

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestCampaignSetupFailures runs campaigns of the kill and partition kinds
// some of whose kill runs cannot start after validation passed
// (Outcome.SetupFailed): such a run is an unknown run of the kind, which
// goes on to its next run; only MaxSetupFailures of them in a row give the
// kind up, leaving its remaining runs out of the progress's total (told
// before the partition runs), and nothing makes it not applicable but a
// refusal (ErrNotApplicable).
func TestCampaignSetupFailures(t *testing.T) {
	const setupErr = "runner: setup failed: starting mariadb: local: mariadb-install-db: exit status 1"
	tests := []struct {
		name string
		// failed says whether the run of the kill kind with seed fails
		// its setup; refused whether validation refuses it.
		failed, refused func(seed uint64) bool
		// the kill row and the campaign's progress total
		runs, unknown, setupFailed int
		gaveUp, notApplicable      bool
		total                      int
	}{
		{name: "one failed setup among the runs", failed: func(seed uint64) bool { return seed == 3 },
			runs: 6, unknown: 1, setupFailed: 1, total: 12},
		{name: "two in a row, then a run that starts", failed: func(seed uint64) bool { return seed == 2 || seed == 3 },
			runs: 6, unknown: 2, setupFailed: 2, total: 12},
		{name: "three in a row give the kind up", failed: func(seed uint64) bool { return seed >= 2 },
			runs: 4, unknown: 3, setupFailed: 3, gaveUp: true, total: 10},
		{name: "three in a row at the end give nothing up", failed: func(seed uint64) bool { return seed >= 4 },
			runs: 6, unknown: 3, setupFailed: 3, total: 12},
		{name: "a validation refusal makes the kind not applicable", refused: func(uint64) bool { return true },
			notApplicable: true, total: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kills []uint64
			run := func(_ context.Context, sc *scenarios.Scenario) (Outcome, error) {
				if kindOf(sc) != "kill" {
					return Outcome{Verdict: checker.Valid}, nil
				}
				kills = append(kills, sc.Seed)
				switch {
				case tt.refused != nil && tt.refused(sc.Seed):
					return Outcome{}, fmt.Errorf("%w: runner: setup failed: a fenced register needs fencing tokens", ErrNotApplicable)
				case tt.failed != nil && tt.failed(sc.Seed):
					return Outcome{Dir: fmt.Sprintf("run-%d", sc.Seed), Verdict: checker.Unknown, SetupFailed: setupErr}, nil
				}
				return Outcome{Verdict: checker.Valid}, nil
			}
			var log strings.Builder
			var last Progress
			rep, err := Campaign(context.Background(), base(), run, nil, Options{Faults: []string{"kill", "partition"}, Runs: 6, NoBaseline: true, Log: &log,
				Progress: func(p Progress) { last = p }})
			if err != nil {
				t.Fatal(err)
			}
			if p := rep.Rows[1]; p.Fault != "partition" || p.Runs != 6 || last.Kind != "partition" {
				t.Fatalf("partition row %+v, last progress of %s: want the 6 runs of partition after kill", p, last.Kind)
			}
			r := rep.Rows[0]
			if r.Fault != "kill" || r.Runs != tt.runs || r.Unknown != tt.unknown || r.SetupFailed != tt.setupFailed || r.Invalid != 0 {
				t.Errorf("kill row %+v: want %d runs, %d unknown, %d of them setups that failed", r, tt.runs, tt.unknown, tt.setupFailed)
			}
			if (r.NotApplicable != "") != tt.notApplicable {
				t.Errorf("kill row not applicable %q; want it %v", r.NotApplicable, tt.notApplicable)
			}
			wantGaveUp := fmt.Sprintf("setup failed in %d runs in a row: %s", MaxSetupFailures, setupErr)
			if tt.gaveUp && r.SetupGaveUp != wantGaveUp || !tt.gaveUp && r.SetupGaveUp != "" {
				t.Errorf("kill row gave up %q; want it %v (%q)", r.SetupGaveUp, tt.gaveUp, wantGaveUp)
			}
			if last.Total != tt.total {
				t.Errorf("the last progress told %d runs in all, want %d", last.Total, tt.total)
			}
			if n := len(kills); n != max(tt.runs, 1) {
				t.Errorf("%d kill runs made (seeds %v), want %d", n, kills, max(tt.runs, 1))
			}
			if tt.setupFailed > 0 && !strings.Contains(log.String(), "unknown (setup failed: "+setupErr+")") {
				t.Errorf("the log does not give the failed setup's error:\n%s", log.String())
			}
			if unknown, setupFailed, _, _ := rep.Unknowns(); unknown != tt.unknown || setupFailed != tt.setupFailed {
				t.Errorf("Unknowns = %d, %d setups failed; want %d, %d", unknown, setupFailed, tt.unknown, tt.setupFailed)
			}
		})
	}
}
