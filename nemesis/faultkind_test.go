package nemesis

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// TestEveryKindHasItsInjector checks that Faults pairs every fault kind of
// faultkind.All, in its order, with an injector whose facts are the kind's,
// and that no injector is left without a kind: a fault that skews node
// clocks gains the systems whose clocks the cluster can skew, and nothing
// else.
func TestEveryKindHasItsInjector(t *testing.T) {
	kinds, faults := faultkind.All(), Faults()
	if len(faults) != len(kinds) || len(injectors) != len(kinds) {
		t.Fatalf("%d kinds, %d faults, %d injectors", len(kinds), len(faults), len(injectors))
	}
	for i, want := range kinds {
		t.Run(want.Name, func(t *testing.T) {
			if want.Class == history.ClassClock && want.Targets == TargetsNodes {
				if want.Systems != nil {
					t.Errorf("faultkind declares systems %v: the cluster's are the ones", want.Systems)
				}
				want.Systems = cluster.SkewableSystems()
			}
			if got := faults[i].Facts(); !reflect.DeepEqual(got, want) {
				t.Errorf("Faults()[%d].Facts() = %+v, want %+v", i, got, want)
			}
		})
	}
}

// TestHuntDrawsAreStepsTheFaultTakes checks that every option value and
// pause point a fault campaign draws for a kind (faultkind.Hunt) is one its
// steps take: the kind's Check accepts a step of each.
func TestHuntDrawsAreStepsTheFaultTakes(t *testing.T) {
	for _, k := range Faults() {
		f := k.Facts()
		base := Step{Fault: f.Name, Duration: time.Second}
		if f.Offset {
			base.Offset = time.Second
		}
		if len(f.Hunt.Points) > 0 && !f.Point {
			t.Errorf("%s: hunt points %v for a fault that takes no point", f.Name, f.Hunt.Points)
		}
		for _, p := range f.Hunt.Points {
			st := base
			st.Point = p
			if !slices.Contains(PausePoints, p) || k.Check(st) != nil {
				t.Errorf("%s: hunt point %q is no pause point it takes: %v", f.Name, p, k.Check(st))
			}
		}
		for opt, vals := range f.Hunt.Choices {
			for _, v := range vals {
				st := base
				st.Options = map[string]string{opt: v}
				if err := CheckStep(st); err != nil {
					t.Errorf("%s: hunt option %s=%s: %v", f.Name, opt, v, err)
				}
			}
		}
	}
}
