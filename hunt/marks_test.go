package hunt

import (
	"context"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestCampaignCountsHostTroubleAndStepsOffScript: a row counts the runs
// whose host clock stepped or harness stalled, and those with a step that
// did not run as written, whatever their verdict.
func TestCampaignCountsHostTroubleAndStepsOffScript(t *testing.T) {
	run := func(_ context.Context, sc *scenarios.Scenario) (Outcome, error) {
		out := Outcome{Verdict: checker.Valid}
		if kindOf(sc) != "kill" {
			return out, nil
		}
		switch sc.Seed % 4 {
		case 0:
			out.Verdict, out.HostTrouble = checker.Invalid, true
		case 1:
			out.HostTrouble, out.OffScript = true, true
		case 2:
			out.OffScript = true
		}
		return out, nil
	}
	rep, err := Campaign(context.Background(), base(), run, nil, Options{Faults: []string{"kill"}, Runs: 4, Seed: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		want := [2]int{}
		if r.Fault == "kill" {
			want = [2]int{2, 2}
		}
		if got := [2]int{r.HostTrouble, r.OffScript}; got != want {
			t.Errorf("%s: host trouble and off script in %v runs, want %v", r.Fault, got, want)
		}
	}
}
