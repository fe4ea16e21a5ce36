package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/hunt"
)

// TestHuntTables checks that the console table and the Markdown say which
// schedules ran and give each kind's smallest margin.
func TestHuntTables(t *testing.T) {
	rows := func() []*hunt.Row {
		return []*hunt.Row{
			{Fault: hunt.NoFault, Runs: 2},
			{Fault: "client-pause", Runs: 2, Invalid: 1, Anomalies: []string{"stale-write"}, Failing: []string{"store/x/1"}, Margin: -0.25, HasMargin: true, Steered: 1},
			{Fault: "failover", NotApplicable: "no replicas"},
		}
	}
	tests := []struct {
		name string
		rep  *hunt.Report
		want []string
	}{
		{name: "random", rep: &hunt.Report{Scenario: "s", Rows: rows(), Runs: 4},
			want: []string{"MARGIN", "-0.250", "random schedules", "| margin |", "| -0.250 |"}},
		{name: "steered", rep: &hunt.Report{Scenario: "s", Rows: rows(), Runs: 4, Steer: true},
			want: []string{"steered (1 of 4 runs mutated", "-0.250"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			printHunt(&b, tt.rep)
			all := b.String() + huntMarkdown(tt.rep, "s")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("tables lack %q:\n%s", w, all)
				}
			}
		})
	}
}
