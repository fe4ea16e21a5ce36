package main

import (
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
	"github.com/jepsen-lite/jepsen-lite/shrink"
)

// TestShrinkTrialOutcome maps a candidate's run to what shrink counts: a
// run whose verdict is unknown (its check out of its budget, a fault that
// failed even beside a violation) is undecided with why, never a pass; an
// invalid run fails only with one of the original kinds.
func TestShrinkTrialOutcome(t *testing.T) {
	kinds := []string{"stale-write"}
	invalid := func(kind string) []checker.Result {
		return []checker.Result{{Name: "resource", Verdict: checker.Invalid, Anomalies: []checker.Anomaly{{Kind: kind}}}}
	}
	tests := []struct {
		name    string
		r       reports.Results
		want    shrink.Outcome
		wantWhy string
	}{
		{name: "invalid with an original kind", r: reports.Results{Verdict: checker.Invalid, Checkers: invalid("stale-write")}, want: shrink.Failed},
		{name: "invalid with another kind", r: reports.Results{Verdict: checker.Invalid, Checkers: invalid("double-hold")}, want: shrink.Passed},
		{name: "valid", r: reports.Results{Verdict: checker.Valid, Checkers: []checker.Result{{Name: "resource", Verdict: checker.Valid}}}, want: shrink.Passed},
		{name: "a check out of its budget", want: shrink.Undecided, wantWhy: "linearizable: timed out after 1m0s",
			r: reports.Results{Verdict: checker.Unknown, Checkers: []checker.Result{{Name: "linearizable", Verdict: checker.Unknown, Note: "timed out after 1m0s"}}}},
		{name: "a fault that failed beside a violation", want: shrink.Undecided, wantWhy: "nemesis: the fault failed",
			r: reports.Results{Verdict: checker.Invalid, FailedFaults: []reports.FailedFault{{Step: "kill", Error: "boom"}},
				Checkers: append(invalid("stale-write"), checker.Result{Name: "nemesis", Verdict: checker.Unknown, Note: "the fault failed"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why, err := trialOutcome(&tt.r, kinds)
			if err != nil || got != tt.want || why != tt.wantWhy {
				t.Errorf("trialOutcome = %s, %q, %v; want %s, %q", got, why, err, tt.want, tt.wantWhy)
			}
		})
	}
}

// TestShrinkDescriptionCountsUndecided: shrunk.yaml's description and the
// summary count the undecided candidates, runs and confirmation runs, and
// say when every candidate was undecided.
func TestShrinkDescriptionCountsUndecided(t *testing.T) {
	sc, err := scenarios.Load("redis-single-random-pauses", runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		out  shrink.Result
		want []string
	}{
		{name: "every run decided", out: shrink.Result{Candidates: 9, Failed: 5, Confirmed: 5},
			want: []string{"failed in 5 of 5 confirmation runs after it"}},
		{name: "some candidates undecided", out: shrink.Result{Candidates: 9, Undecided: 2, UndecidedRuns: 5, Failed: 3, Confirmed: 5, ConfirmUndecided: 1},
			want: []string{"2 of 9 candidates were undecided (5 runs of unknown verdict), and none was kept", "failed in 3 of 5 confirmation runs, 1 undecided after it"}},
		{name: "undecided runs, no undecided candidate", out: shrink.Result{Candidates: 9, UndecidedRuns: 1, Failed: 5, Confirmed: 5},
			want: []string{"1 of its runs had an unknown verdict, counted neither as a failure nor as a pass; no candidate was left undecided"}},
		{name: "every candidate undecided", out: shrink.Result{Candidates: 4, Undecided: 4, UndecidedRuns: 8, Failed: 5, Confirmed: 5},
			want: []string{"nothing could be removed.", "every candidate (4) was undecided (8 runs of unknown verdict), so the scenario stays as given"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.out.Scenario = sc
			desc := shrunkDescription("store/x/1", sc, []string{"stale-write"}, &tt.out, defaultShrink)
			for _, w := range tt.want {
				if !strings.Contains(desc, w) {
					t.Errorf("the description does not say %q:\n%s", w, desc)
				}
			}
			if tt.out.UndecidedRuns == 0 && strings.Contains(desc, "undecided") {
				t.Errorf("the description speaks of undecided runs when there were none:\n%s", desc)
			}
		})
	}
}
