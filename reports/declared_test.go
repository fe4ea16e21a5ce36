package reports

import (
	"testing"

	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
)

// declared returns op as the nemesis records it from format version 6 on:
// a fault op carries its class and its heal (nemesis.Facts); a heal or a
// name that is no fault kind is left as it is.
func declared(op history.Op) history.Op {
	if f, ok := nemesis.FactsOf(op.F); ok {
		op.Class, op.Heal = f.Class, f.Heal
	}
	return op
}

// TestTimelineDrawsEveryFaultWithItsOwnHeal ranges over every fault kind F
// and every other kind G: with G in force from 1 s to 5 s, F at 2 s and F's
// heal at 3 s, the timeline draws F from 2 s to 3 s (a moment at 2 s) and G
// from 1 s to 5 s: F's heal ends F, never G (a reset's heal once ended an
// earlier partition).
func TestTimelineDrawsEveryFaultWithItsOwnHeal(t *testing.T) {
	nem := func(at float64, f, value string) history.Op {
		return declared(history.Op{Time: sec(at), Process: history.NemesisProcess, Type: history.Info, F: f, Value: history.JSONValue(value)})
	}
	for _, fk := range nemesis.Faults() {
		f := fk.Facts()
		for _, gk := range nemesis.Faults() {
			g := gk.Facts()
			if g.Name == f.Name || g.Moment {
				continue
			}
			t.Run(f.Name+" inside "+g.Name, func(t *testing.T) {
				ops := []history.Op{history.Header(), nem(1, g.Name, "g"), nem(2, f.Name, "f")}
				if !f.Moment {
					ops = append(ops, nem(3, f.Heal, "f"))
				}
				ops = append(ops, nem(5, g.Heal, "g"))
				got := buildNemesis(indexed(ops), sec(10))
				if len(got) != 2 {
					t.Fatalf("drawn %+v, want %s and %s", got, g.Name, f.Name)
				}
				gi, fi := got[0], got[1]
				if gi.Fault != g.Name || gi.Start != sec(1) || gi.End != sec(5) || gi.Open || gi.Point || gi.Class != string(g.Class) {
					t.Errorf("%s drawn %+v, want from 1s to 5s in class %s", g.Name, gi, g.Class)
				}
				want := sec(3)
				if f.Moment {
					want = sec(2)
				}
				if fi.Fault != f.Name || fi.Start != sec(2) || fi.End != want || fi.Open || fi.Point != f.Moment || fi.Class != string(f.Class) {
					t.Errorf("%s drawn %+v, want from 2s to %v (a point: %v) in class %s", f.Name, fi, want, f.Moment, f.Class)
				}
			})
		}
	}
}
