package checker

import (
	"slices"
	"testing"
)

func TestExpectationMet(t *testing.T) {
	found := []Result{
		{Name: "double-hold", Verdict: Invalid, Anomalies: []Anomaly{{Kind: DoubleHold}}},
		{Name: "resource", Verdict: Valid},
	}
	stuck := &LivenessResult{Verdict: Invalid, Anomalies: []Anomaly{{Kind: Stuck}}}
	unavailable := &LivenessResult{Verdict: Invalid, Anomalies: []Anomaly{{Kind: Unavailable}}}
	both := &LivenessResult{Verdict: Invalid, Anomalies: []Anomaly{{Kind: Stuck}, {Kind: Unavailable}}}
	tests := []struct {
		name    string
		e       Expectation
		verdict Verdict
		results []Result
		live    *LivenessResult
		want    bool
	}{
		{"zero expects valid", Expectation{}, Valid, nil, nil, true},
		{"zero rejects invalid", Expectation{}, Invalid, found, nil, false},
		{"verdict and kinds", Expectation{Verdict: Invalid, Anomalies: []string{DoubleHold}}, Invalid, found, nil, true},
		{"missing kind", Expectation{Verdict: Invalid, Anomalies: []string{DoubleHold, StaleWrite}}, Invalid, found, nil, false},
		{"wrong verdict", Expectation{Verdict: Valid}, Invalid, found, nil, false},
		{"absent kind absent", Expectation{Verdict: Invalid, Anomalies: []string{DoubleHold}, Absent: []string{StaleWrite}}, Invalid, found, nil, true},
		{"absent kind found", Expectation{Verdict: Invalid, Absent: []string{DoubleHold}}, Invalid, found, nil, false},
		{"unknown expected", Expectation{Verdict: Unknown}, Unknown, nil, nil, true},
		{"stuck required and found", Expectation{Liveness: ExpectStuck}, Valid, nil, stuck, true},
		{"stuck required, found with unavailable", Expectation{Liveness: ExpectStuck}, Valid, nil, both, true},
		{"stuck required, only unavailable found", Expectation{Liveness: ExpectStuck}, Valid, nil, unavailable, false},
		{"stuck required, not found", Expectation{Liveness: ExpectStuck}, Valid, nil, &LivenessResult{Verdict: Valid}, false},
		{"stuck required, not checked", Expectation{Liveness: ExpectStuck}, Valid, nil, nil, false},
		{"unavailable required and found", Expectation{Liveness: ExpectUnavailable}, Valid, nil, unavailable, true},
		{"unavailable required, found with stuck", Expectation{Liveness: ExpectUnavailable}, Valid, nil, both, true},
		{"unavailable required, only stuck found", Expectation{Liveness: ExpectUnavailable}, Valid, nil, stuck, false},
		{"unavailable required, not checked", Expectation{Liveness: ExpectUnavailable}, Valid, nil, nil, false},
		{"live required and live", Expectation{Liveness: ExpectLive}, Valid, nil, &LivenessResult{Verdict: Valid}, true},
		{"live required, stuck", Expectation{Liveness: ExpectLive}, Valid, nil, stuck, false},
		{"live required, unavailable", Expectation{Liveness: ExpectLive}, Valid, nil, unavailable, false},
		{"live required, not judged", Expectation{Liveness: ExpectLive}, Valid, nil, &LivenessResult{Verdict: Unknown}, false},
		{"liveness not expected: a stuck run still meets a safety expectation", Expectation{}, Valid, nil, both, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.Met(tt.verdict, tt.results, tt.live); got != tt.want {
				t.Errorf("Met = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOverall(t *testing.T) {
	tests := []struct {
		name string
		in   []Verdict
		want Verdict
	}{
		{"none is unknown", nil, Unknown},
		{"all valid", []Verdict{Valid, Valid}, Valid},
		{"unknown beats valid", []Verdict{Valid, Unknown}, Unknown},
		{"invalid beats unknown", []Verdict{Unknown, Invalid, Valid}, Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rs []Result
			for _, v := range tt.in {
				rs = append(rs, Result{Verdict: v})
			}
			if got := Overall(rs); got != tt.want {
				t.Errorf("Overall = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestTaskKinds: the kinds whose key is a task are the queue checker's and
// lost-task, each a safety or a liveness kind; the lock's are not.
func TestTaskKinds(t *testing.T) {
	tests := []struct {
		name string
		kind string
		task bool
	}{
		{"double-capture", DoubleCapture, true},
		{"budget-overspent", BudgetOverspent, true},
		{"cross-queue", CrossQueue, true},
		{"stale-status", StaleStatus, true},
		{"lost-task", LostTask, true},
		{"double-hold is of a lock key", DoubleHold, false},
		{"stuck is of a lock key", Stuck, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := slices.Contains(TaskKinds(), tc.kind); got != tc.task {
				t.Errorf("TaskKinds() has %s: %v, want %v", tc.kind, got, tc.task)
			}
			if tc.task && !slices.Contains(Kinds(), tc.kind) && !slices.Contains(LivenessKinds(), tc.kind) {
				t.Errorf("%s is neither a safety nor a liveness kind", tc.kind)
			}
		})
	}
}
