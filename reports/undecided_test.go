package reports

import (
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
)

// TestUndecided holds a run's outcome unknown when its verdict is, or when
// a fault failed whatever its verdict, with the first unknown result's note
// for why; a decided run is not.
func TestUndecided(t *testing.T) {
	tests := []struct {
		name          string
		r             Results
		wantUndecided bool
		wantWhy       string
	}{
		{name: "valid", r: Results{Verdict: checker.Valid, Checkers: []checker.Result{{Name: "hold", Verdict: checker.Valid}}}},
		{name: "invalid", r: Results{Verdict: checker.Invalid, Checkers: []checker.Result{{Name: "hold", Verdict: checker.Invalid}}}},
		{name: "a check out of its budget", wantUndecided: true, wantWhy: "linearizable: timed out after 1m0s",
			r: Results{Verdict: checker.Unknown, Checkers: []checker.Result{{Name: "hold", Verdict: checker.Valid}, {Name: "linearizable", Verdict: checker.Unknown, Note: "timed out after 1m0s"}}}},
		{name: "a fault that failed, with a violation", wantUndecided: true, wantWhy: "nemesis: the fault x failed",
			r: Results{Verdict: checker.Invalid, FailedFaults: []FailedFault{{Step: "x", Error: "boom"}},
				Checkers: []checker.Result{{Name: "hold", Verdict: checker.Invalid}, {Name: "nemesis", Verdict: checker.Unknown, Note: "the fault x failed"}}}},
		{name: "unknown without a note", wantUndecided: true, wantWhy: "run: verdict unknown",
			r: Results{Verdict: checker.Unknown, Checkers: []checker.Result{{Name: "run", Verdict: checker.Unknown}}}},
		{name: "unknown without a result", wantUndecided: true, wantWhy: "verdict unknown", r: Results{Verdict: checker.Unknown}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why, undecided := tt.r.Undecided()
			if undecided != tt.wantUndecided || why != tt.wantWhy {
				t.Errorf("Undecided = %q, %v; want %q, %v", why, undecided, tt.wantWhy, tt.wantUndecided)
			}
		})
	}
}
