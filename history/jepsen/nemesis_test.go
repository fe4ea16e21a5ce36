package jepsen_test

import (
	"slices"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestPartitionNemesisCutsUntilItsHeal imports a history of each of
// Jepsen's partition nemeses (jepsen.nemesis's partitioner, whose :start
// cuts and :stop heals; jepsen.nemesis.combined's :start-partition and
// :stop-partition): the acquire of unknown outcome asked during the cut may
// have reached the server only after the heal (docs/history.md §4.5,
// "Requests held back by a cut"), and took the lock for a lease then, so
// the refusals that follow are excused and the lock is not stuck. Read as
// a heal of a kill, the partitioner's :start left no cut in force, and the
// refusals were reported as stuck.
func TestPartitionNemesisCutsUntilItsHeal(t *testing.T) {
	tests := []struct {
		name, file string
	}{
		{"partitioner start and stop", "partition-start-stop.edn"},
		{"combined start-partition and stop-partition", "combined-partition.edn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := readFixture(t, tt.file)
			version := history.Version(h)
			var cuts, heals int
			for _, op := range h {
				switch {
				case op.Process != history.NemesisProcess || op.IsRecord():
				case op.IsHealOp(version) || op.F == checker.JepsenStop:
					heals++
				case op.HoldsRequests(version):
					cuts++
				}
			}
			if cuts != 2 || heals != 2 {
				t.Errorf("%d cuts and %d heals among the nemesis ops, want 2 and 2 (the cut's two ops, its heal's two)", cuts, heals)
			}
			live := checker.Liveness(h, checker.LivenessOptions{})
			if live.Verdict != checker.Valid || slices.ContainsFunc(live.Anomalies, func(a checker.Anomaly) bool { return a.Kind == checker.Stuck }) {
				t.Errorf("liveness %s with %+v, want valid: the acquire held back by the cut may hold the lock", live.Verdict, live.Anomalies)
			}
		})
	}
}

// TestNemesisNames pins the names an import gives Jepsen's nemesis ops
// (docs/history.md §5, "Faults"): each that of this format's version 1
// that says what it does.
func TestNemesisNames(t *testing.T) {
	tests := []struct {
		name string
		fs   []string // the nemesis ops' :f, in order
		want []string // their f once imported
	}{
		{"the partitioner's start cuts and its stop heals", []string{"start", "start", "stop", "stop"}, []string{"partition", "partition", "stop", "stop"}},
		{"the combined db nemesis's start heals its kill", []string{"kill", "kill", "start", "start"}, []string{"kill", "kill", "start", "start"}},
		{"pause and resume keep their names", []string{"pause", "resume"}, []string{"pause", "resume"}},
		{"the combined partition", []string{"start-partition", "stop-partition"}, []string{"partition", "heal"}},
		{"the combined packet faults read as a cut", []string{"start-packet", "stop-packet"}, []string{"drop", "heal"}},
		{"the combined clock faults", []string{"bump-clock", "reset-clock", "strobe-clock", "reset-clock"}, []string{"clock-bump", "clock-reset", "clock-strobe", "clock-reset"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edn := "{:type :invoke, :f :acquire, :process 0}\n"
			for _, f := range tt.fs {
				edn += "{:type :info, :f :" + f + ", :process :nemesis}\n"
			}
			h := mustRead(t, edn)
			var got []string
			for _, op := range h[1:] {
				got = append(got, op.F)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("imported as %v, want %v", got, tt.want)
			}
			version := history.Version(h)
			for _, op := range h[1:] {
				_, class := op.FaultOf(version)
				if !op.IsHealOp(version) && op.F != checker.JepsenStop && class == history.ClassOther {
					t.Errorf("fault %s reads as of class other", op.F)
				}
			}
		})
	}
}
