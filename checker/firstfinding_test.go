package checker

import "testing"

func TestFirstFinding(t *testing.T) {
	stale := Anomaly{Kind: "stale-write", Message: "worker 3 wrote k late"}
	tests := []struct {
		name    string
		results []Result
		want    string
	}{
		{"none", nil, ""},
		{"valid only", []Result{{Name: "a", Verdict: Valid}}, ""},
		{"invalid without an anomaly", []Result{{Name: "a", Verdict: Invalid}}, ""},
		{"the first invalid result's first anomaly", []Result{
			{Name: "a", Verdict: Valid},
			{Name: "b", Verdict: Invalid, Anomalies: []Anomaly{stale, {Kind: "lost-update", Message: "k ended at 9"}}},
			{Name: "c", Verdict: Invalid, Anomalies: []Anomaly{{Kind: "double-hold", Message: "two holders"}}},
		}, "stale-write: worker 3 wrote k late"},
		{"with its host note", []Result{
			{Name: "b", Verdict: Invalid, Anomalies: []Anomaly{{Kind: "early-grant", Message: "worker 1 was granted k", Host: "harness stalled 598ms at 3.002s inside this finding's window"}}},
		}, "early-grant: worker 1 was granted k (host: harness stalled 598ms at 3.002s inside this finding's window)"},
		{"an unknown result's anomaly is not a finding", []Result{
			{Name: "a", Verdict: Unknown, Anomalies: []Anomaly{stale}},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FirstFinding(tt.results); got != tt.want {
				t.Errorf("FirstFinding = %q, want %q", got, tt.want)
			}
		})
	}
}
