package hunt

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// mergeRun is a RunFunc whose outcome is a function of the run's kind and
// seed alone: client pauses invalid at even seeds, kills unknown at seeds
// divisible by 3 (faults failed) and 5 (check out of budget), a partition's
// setup failed at seed 7, every other run's margin its own (seed and kind
// apart), a host stall at seed 4.
func mergeRun(_ context.Context, sc *scenarios.Scenario) (Outcome, error) {
	kind := kindOf(sc)
	out := Outcome{Verdict: checker.Valid, Dir: fmt.Sprintf("store/%s-%d", kind, sc.Seed), HostTrouble: sc.Seed == 4}
	margin := time.Duration(1000-int(sc.Seed)*7-len(kind)) * time.Millisecond
	out.Margins = []checker.Margin{{Key: "k", Write: &checker.TimeMargin{Margin: margin, Lease: time.Second}}}
	switch {
	case kind == "client-pause" && sc.Seed%2 == 0:
		out.Verdict, out.Finding = checker.Invalid, fmt.Sprintf("stale-write: seed %d", sc.Seed)
		out.Anomalies = []string{"stale-write"}
		if sc.Seed%4 == 0 {
			out.Anomalies = append(out.Anomalies, "lost-update")
		}
	case kind == "kill" && sc.Seed%3 == 0:
		out.FaultFailed = true
	case kind == "kill" && sc.Seed%5 == 0:
		out.Verdict, out.OutOfBudget = checker.Unknown, true
	case kind == "partition" && sc.Seed == 7:
		out.Verdict, out.SetupFailed, out.Margins = checker.Unknown, "a server would not start", nil
	}
	return out, nil
}

// TestMergeParts makes a random campaign whole and in n parts, with runs
// whose outcomes follow their kind and seed, and requires the merge of the
// parts, given in any order of their indexes, to have the whole
// campaign's rows: counts, anomalies, failing runs in the order of their
// seeds with their findings, margins.
func TestMergeParts(t *testing.T) {
	opts := Options{Faults: []string{"client-pause", "kill", "partition"}, Runs: 9, Seed: 2}
	whole, err := Campaign(context.Background(), base(), mergeRun, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Rows[1].Invalid == 0 || whole.Rows[2].Unknown == 0 || whole.Rows[3].SetupFailed != 1 {
		t.Fatalf("the whole campaign found nothing to merge: %+v", whole.Rows)
	}
	for _, n := range []int{2, 3, 4, 10} {
		t.Run(fmt.Sprintf("%d parts", n), func(t *testing.T) {
			var parts []*Report
			for i := 1; i <= n; i++ {
				o := opts
				o.Shard = Shard{Index: i, Count: n}
				rep, err := Campaign(context.Background(), base(), mergeRun, nil, o)
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, rep)
			}
			merged, err := MergeParts(parts)
			if err != nil {
				t.Fatal(err)
			}
			if merged.Runs != whole.Runs || merged.Scenario != whole.Scenario || merged.Steer != whole.Steer {
				t.Errorf("merged %d runs of %s (steer %v), the whole %d of %s (%v)", merged.Runs, merged.Scenario, merged.Steer, whole.Runs, whole.Scenario, whole.Steer)
			}
			for k, r := range merged.Rows {
				if !reflect.DeepEqual(r, whole.Rows[k]) {
					t.Errorf("merged row %d:\n%+v\nwant the whole campaign's\n%+v", k, *r, *whole.Rows[k])
				}
			}
			if len(merged.Rows) != len(whole.Rows) {
				t.Errorf("merged %d rows, want %d", len(merged.Rows), len(whole.Rows))
			}
		})
	}
}

// TestMergePartsRefuses: parts whose kinds differ, or whose failing runs
// lack their seeds, are not merged, and the error says which part.
func TestMergePartsRefuses(t *testing.T) {
	row := func(fault string) *Row { return &Row{Fault: fault, Runs: 1} }
	tests := []struct {
		name  string
		parts []*Report
		want  string
	}{
		{"other kinds", []*Report{{Rows: []*Row{row(NoFault), row("kill")}}, {Rows: []*Row{row(NoFault), row("partition")}}}, "part 2's kinds"},
		{"other order", []*Report{{Rows: []*Row{row("kill"), row(NoFault)}}, {Rows: []*Row{row(NoFault), row("kill"), row("partition")}}}, "part 1's kinds"},
		{"failing runs without seeds", []*Report{{Rows: []*Row{row(NoFault)}}, {Rows: []*Row{{Fault: NoFault, Runs: 1, Invalid: 1, Failing: []string{"d"}}}}}, "part 2's none row lists 1 failing runs and 0 seeds"},
		{"none", nil, "no parts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := MergeParts(tt.parts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("MergeParts: %v, want an error with %q", err, tt.want)
			}
		})
	}
	// A part that stopped early (out of its budget) is a prefix, merged;
	// a kind whose runs a part gave up after failed setups says so.
	short := &Report{Rows: []*Row{row(NoFault)}, OutOfTime: true}
	gaveUp := &Row{Fault: "kill", Runs: 3, Unknown: 3, SetupFailed: 3, SetupGaveUp: "setup failed in 3 runs in a row: x"}
	rep, err := MergeParts([]*Report{short, {Rows: []*Row{row(NoFault), row("kill")}}, {Rows: []*Row{row(NoFault), gaveUp}}})
	if err != nil || len(rep.Rows) != 2 || !rep.OutOfTime || rep.Rows[1].SetupGaveUp != gaveUp.SetupGaveUp || rep.Rows[1].SetupFailed != 3 || rep.Rows[1].Runs != 4 {
		t.Errorf("a part out of its budget and one that gave up: %+v, %v; want both kinds, out of time, kill gave up after 3 of 4 runs", rep, err)
	}
}
