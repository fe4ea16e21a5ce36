package checker

import "testing"

func TestExpectationMet(t *testing.T) {
	found := []Result{
		{Name: "double-hold", Verdict: Invalid, Anomalies: []Anomaly{{Kind: DoubleHold}}},
		{Name: "resource", Verdict: Valid},
	}
	tests := []struct {
		name    string
		e       Expectation
		verdict Verdict
		results []Result
		want    bool
	}{
		{"zero expects valid", Expectation{}, Valid, nil, true},
		{"zero rejects invalid", Expectation{}, Invalid, found, false},
		{"verdict and kinds", Expectation{Verdict: Invalid, Anomalies: []string{DoubleHold}}, Invalid, found, true},
		{"missing kind", Expectation{Verdict: Invalid, Anomalies: []string{DoubleHold, StaleWrite}}, Invalid, found, false},
		{"wrong verdict", Expectation{Verdict: Valid}, Invalid, found, false},
		{"absent kind absent", Expectation{Verdict: Invalid, Anomalies: []string{DoubleHold}, Absent: []string{StaleWrite}}, Invalid, found, true},
		{"absent kind found", Expectation{Verdict: Invalid, Absent: []string{DoubleHold}}, Invalid, found, false},
		{"unknown expected", Expectation{Verdict: Unknown}, Unknown, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.Met(tt.verdict, tt.results); got != tt.want {
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
