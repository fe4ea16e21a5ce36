package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/hunt"
)

// TestHuntTables checks that the console table and the Markdown say which
// schedules ran and give each kind's smallest margin, why runs were
// unknown, and which kinds' runs stopped after failed setups (never
// called not applicable).
func TestHuntTables(t *testing.T) {
	rows := func() []*hunt.Row {
		return []*hunt.Row{
			{Fault: hunt.NoFault, Runs: 2},
			{Fault: "client-pause", Runs: 2, Invalid: 1, Anomalies: []string{"stale-write"}, Failing: []string{"store/x/1"}, Margin: -0.25, HasMargin: true, Steered: 1},
			{Fault: "failover", NotApplicable: "no replicas"},
		}
	}
	tests := []struct {
		name          string
		rep           *hunt.Report
		want, notWant []string
	}{
		{name: "random", rep: &hunt.Report{Scenario: "s", Rows: rows(), Runs: 4},
			want: []string{"MARGIN", "-0.250", "random schedules", "| margin |", "| -0.250 |"}},
		{name: "steered", rep: &hunt.Report{Scenario: "s", Rows: rows(), Runs: 4, Steer: true},
			want: []string{"steered (1 of 4 runs mutated", "-0.250"}},
		{name: "unknown runs", rep: &hunt.Report{Scenario: "s", Runs: 6, Rows: append(rows(), &hunt.Row{Fault: "kill", Runs: 2, Unknown: 2, OutOfBudget: 1})},
			want: []string{"random schedules; 2 unknown, neither invalid nor held (1 with a check out of its time budget, 1 for another reason)\n",
				"random schedules; 2 unknown, neither invalid nor held (1 with a check out of its time budget, 1 for another reason).\n"}},
		{name: "a kind given up after failed setups", rep: &hunt.Report{Scenario: "s", Runs: 9, Rows: append(rows(), &hunt.Row{Fault: "kill", Runs: 5, Unknown: 4, SetupFailed: 3, FaultsFailed: 1,
			SetupGaveUp: "setup failed in 3 runs in a row: runner: setup failed: starting mariadb"})},
			want: []string{"kill          5     0/5      4", "| kill | 5 | 0/5 | 4 |",
				"\nhunt: kill: its runs after these 5 were not made: setup failed in 3 runs in a row: runner: setup failed: starting mariadb\n",
				"\n**kill**: its runs after these 5 were not made: setup failed in 3 runs in a row: runner: setup failed: starting mariadb.\n",
				"random schedules; 4 unknown, neither invalid nor held (1 whose faults failed, 3 whose setup failed)\n"},
			notWant: []string{"not applicable: setup failed"}},
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
			for _, w := range tt.notWant {
				if strings.Contains(all, w) {
					t.Errorf("tables say %q:\n%s", w, all)
				}
			}
		})
	}
}

// TestHuntExitCountsUnknown: a campaign says "nothing found" of its
// decided runs alone, counting its unknown ones, and exits 2 when no run
// was decided: an unknown run never counts as one that held.
func TestHuntExitCountsUnknown(t *testing.T) {
	tests := []struct {
		name     string
		rows     []*hunt.Row
		wantCode int
		want     string
	}{
		{name: "every run decided", rows: []*hunt.Row{{Fault: "kill", Runs: 3}}, wantCode: exitHeld, want: "hunt: nothing found\n"},
		{name: "some runs unknown", rows: []*hunt.Row{{Fault: hunt.NoFault, Runs: 3}, {Fault: "kill", Runs: 3, Unknown: 2, OutOfBudget: 2}},
			wantCode: exitHeld, want: "hunt: nothing found in 4 decided runs (2 unknown)\n"},
		{name: "every run unknown", rows: []*hunt.Row{{Fault: "kill", Runs: 3, Unknown: 3, FaultsFailed: 1, OutOfBudget: 2}},
			wantCode: exitUnknown, want: "hunt: no run decided (3 unknown): nothing found, and nothing shown to hold\n"},
		{name: "every run's setup failed", rows: []*hunt.Row{{Fault: "kill", Runs: 3, Unknown: 3, SetupFailed: 3, SetupGaveUp: "setup failed in 3 runs in a row: x"}},
			wantCode: exitUnknown, want: "hunt: no run decided (3 unknown): nothing found, and nothing shown to hold\n"},
		{name: "an invalid run beside unknown ones", rows: []*hunt.Row{{Fault: "kill", Runs: 3, Unknown: 2, Invalid: 1}},
			wantCode: exitViolated, want: "hunt: FOUND invalid runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code, err := huntExit(context.Background(), &hunt.Report{Scenario: "s", Rows: tt.rows}, nil, &stdout, &stderr)
			if err != nil || code != tt.wantCode || !strings.HasPrefix(stdout.String(), tt.want) {
				t.Errorf("huntExit = %d, %v, saying %q; want %d, saying %q", code, err, stdout.String(), tt.wantCode, tt.want)
			}
		})
	}
}
