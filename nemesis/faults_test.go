package nemesis

import (
	"slices"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// TestEveryFaultDeclaresEveryFact ranges over every fault kind and fails when
// one lacks a fact or declares one that nothing reads: a name of its own, a
// description, a heal unless it is a moment, a known class, the kind of its
// targets, known systems and backends, and its column of the docs table.
func TestEveryFaultDeclaresEveryFact(t *testing.T) {
	systems := cluster.SystemNames()
	backends := []string{"local", "docker"}
	names := map[string]bool{}
	heals := map[string]bool{}
	for _, k := range Faults() {
		heals[k.Facts().Heal] = true
	}
	for _, k := range Faults() {
		f := k.Facts()
		t.Run(f.Name, func(t *testing.T) {
			switch {
			case f.Name == "":
				t.Fatal("no name")
			case names[f.Name]:
				t.Fatal("a name that another fault has")
			case f.Name == "heal" || f.Name == history.FHealAll || heals[f.Name]:
				t.Fatal("a heal's name")
			case f.Description == "":
				t.Error("no description")
			case f.Moment == (f.Heal != ""):
				t.Errorf("heal %q with moment %v: a fault has a heal exactly when it is no moment", f.Heal, f.Moment)
			case !slices.Contains(history.FaultClasses(), f.Class) || f.Class == history.ClassOther:
				t.Errorf("class %q is none of the fault classes (other is for imported histories)", f.Class)
			case !slices.Contains(faultkind.TargetKinds(), f.Targets):
				t.Errorf("targets %q is no TargetKind", f.Targets)
			case f.Tag == "" || f.Column == "":
				t.Errorf("tag %q, column %q: the docs table needs both", f.Tag, f.Column)
			}
			names[f.Name] = true
			for _, s := range f.Systems {
				if !slices.Contains(systems, s) {
					t.Errorf("system %q is unknown (known: %v)", s, systems)
				}
			}
			for _, b := range f.Backends {
				if !slices.Contains(backends, b) {
					t.Errorf("backend %q is unknown (known: %v)", b, backends)
				}
			}
			if f.Offset && f.Class != history.ClassClock {
				t.Errorf("takes a clock offset but its class is %q, not clock: liveness would not know it skews a clock", f.Class)
			}
			if got, ok := FactsOf(f.Name); !ok || got.Name != f.Name {
				t.Errorf("FactsOf(%q) = %+v, %v", f.Name, got, ok)
			}
			if _, err := Lookup(f.Name); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestFaultsOfEarlierVersionsAgree checks that the fault kinds of history
// format versions 1 to 5, whose ops carry no heal and class, are declared with
// the heal and class that a reader of such a history gives them by name
// (history.LegacyFault): an old history reads as a new one says.
func TestFaultsOfEarlierVersionsAgree(t *testing.T) {
	// The fault kinds of format version 5, frozen.
	version5 := []string{"partition", "reset", "latency", "clock-bump", "clock-strobe", "pause", "kill", "failover", "sentinel-failover", "client-pause", "client-clock"}
	for _, name := range version5 {
		t.Run(name, func(t *testing.T) {
			f, ok := FactsOf(name)
			if !ok {
				t.Fatal("no longer declared: a version 5 history still names it")
			}
			heal, class := history.LegacyFault(name)
			if f.Heal != heal || f.Class != class {
				t.Errorf("declared heal %q, class %q; a version 5 history reads heal %q, class %q", f.Heal, f.Class, heal, class)
			}
			if !(history.Op{Process: history.NemesisProcess, Type: history.Info, F: f.Heal}).IsHealOp(5) {
				t.Errorf("its heal %q is no heal in a version 5 history", f.Heal)
			}
		})
	}
}

// TestRecordedFaultCarriesItsFacts runs each fault kind that the fake cluster
// can take through the Runner and checks that its op carries the heal and
// class it declares, its heal op the declared f, and that it takes nodes down
// in the availability record exactly when it declares Unavailable.
func TestRecordedFaultCarriesItsFacts(t *testing.T) {
	nodes := []cluster.Node{{Name: "n1", Role: "primary"}, {Name: "n2", Role: "primary"}, {Name: "n3", Role: "primary"}}
	for _, k := range Faults() {
		f := k.Facts()
		var targets []string
		switch f.Targets {
		case TargetsNodes, TargetsLinks:
			targets = []string{"n1"}
		default:
			continue // failovers need Redis, client faults workers
		}
		if f.Offset {
			continue // the fake cluster skews no clock
		}
		t.Run(f.Name, func(t *testing.T) {
			env, rec := outageEnv(t, nodes)
			r := NewRunner(env)
			a, err := r.inject(t.Context(), Step{Fault: f.Name, Targets: targets})
			if err != nil {
				t.Fatal(err)
			}
			if (a == nil) != f.Moment {
				t.Fatalf("active fault %v for a moment %v: a fault has a heal exactly when it is no moment", a, f.Moment)
			}
			if a != nil {
				if err := r.heal(t.Context(), a); err != nil {
					t.Fatal(err)
				}
			}
			h := rec.History()
			var fault, heal *history.Op
			down := false
			for i := range h {
				op := &h[i]
				switch {
				case op.IsAvailability():
					a, _ := history.AvailabilityOf(*op)
					down = down || len(a.Down) > 0
				case op.F == f.Name:
					fault = op
				case fault != nil && op.IsHealOp(history.FormatVersion):
					heal = op
				}
			}
			if fault == nil || (heal == nil) != f.Moment {
				t.Fatalf("fault %v, heal %v recorded for a moment %v: %v", fault, heal, f.Moment, h)
			}
			if fault.Heal != f.Heal || fault.Class != f.Class {
				t.Errorf("fault op heal %q, class %q; declared %q, %q", fault.Heal, fault.Class, f.Heal, f.Class)
			}
			if heal != nil && (heal.F != f.Heal || !heal.Heals(*fault, history.FormatVersion)) {
				t.Errorf("heal op %q does not end the fault (declared heal %q)", heal.F, f.Heal)
			}
			if down != (f.Unavailable != "") {
				t.Errorf("nodes recorded down: %v; declared unavailable %q", down, f.Unavailable)
			}
		})
	}
}

// TestScheduleNeeds checks what a run sets up for its schedule, read from
// the faults' facts: clusters that can skew node clocks, workers whose clocks
// can be skewed, and links through proxies.
func TestScheduleNeeds(t *testing.T) {
	tests := []struct {
		name                   string
		steps                  []Step
		nodeClocks, workerClks bool
		proxies                bool
	}{
		{"none", []Step{{Fault: "partition"}, {Fault: "kill"}}, false, false, false},
		{"clock-bump", []Step{{Fault: "partition"}, {Fault: "clock-bump"}}, true, false, false},
		{"clock-strobe expecting its failure", []Step{{Fault: "clock-strobe", ExpectFailure: true}}, false, false, false},
		{"client-clock", []Step{{Fault: "client-clock"}}, false, true, false},
		{"latency", []Step{{Fault: "latency"}, {Fault: "heal-all"}}, false, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SkewsNodeClocks(tc.steps); got != tc.nodeClocks {
				t.Errorf("SkewsNodeClocks = %v, want %v", got, tc.nodeClocks)
			}
			if got := SkewsWorkerClocks(tc.steps); got != tc.workerClks {
				t.Errorf("SkewsWorkerClocks = %v, want %v", got, tc.workerClks)
			}
			if got := NeedsProxies(tc.steps); got != tc.proxies {
				t.Errorf("NeedsProxies = %v, want %v", got, tc.proxies)
			}
		})
	}
}
