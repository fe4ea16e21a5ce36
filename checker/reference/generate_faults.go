package reference

import (
	"slices"
	"strconv"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// generate_faults.go holds the generator's nemesis: the faults it draws
// (from the faults' declarations in nemesis/faultkind), their ops as each
// format version records them, and the availability records they imply.

// faultOp returns the op of fault f as a history of g's version records it:
// from version 6 on with its class, and with its heal unless noHeal (a moment,
// or a fault that failed).
func (g *gen) faultOp(typ history.Type, f faultkind.Facts, noHeal bool) history.Op {
	op := history.Op{Process: history.NemesisProcess, Type: typ, F: f.Name}
	if g.version >= 6 {
		op.Class = f.Class
		if !noHeal {
			op.Heal = f.Heal
		}
	}
	return op
}

// nemesis emits one fault of any kind (faultkind.All), sometimes with its
// invoke, and sometimes its heal (a Jepsen stop after a moment). From version 6 on, a client pause is
// sometimes recorded only armed, a moment (as the nemesis records it before
// the worker pauses), which nothing heals.
func (g *gen) nemesis() {
	kinds := faultkind.All()
	f := kinds[g.pick(len(kinds))]
	moment := f.Moment || g.version >= 6 && f.Name == history.FClientPause && g.chance(0.5)
	v := history.JSONValue(map[string]any{"targets": []string{"n" + strconv.Itoa(1+g.pick(3))}})
	op := g.faultOp(history.Info, f, moment)
	op.Value = v
	if g.chance(0.5) {
		g.emit(op)
	} else {
		inv := g.faultOp(history.Invoke, f, moment)
		inv.Value = v
		g.emit(inv)
		g.tick()
		g.emit(op)
	}
	if g.chance(0.5) {
		g.tick()
		heal := f.Heal
		if heal == "" || g.chance(0.2) {
			heal = checker.JepsenStop // as an imported Jepsen history heals
		}
		g.emit(history.Op{Process: history.NemesisProcess, Type: history.Info, F: heal, Value: v})
	}
}

// clusterFaults are the fault kinds that Faults injects: those that target
// nodes, links or workers.
func clusterFaults() []faultkind.Facts {
	var out []faultkind.Facts
	for _, f := range faultkind.All() {
		switch f.Targets {
		case faultkind.TargetsNodes, faultkind.TargetsLinks, faultkind.TargetsWorkers:
			out = append(out, f)
		}
	}
	return out
}

// fault performs a nemesis step on the cluster of Faults: it heals a fault
// in force (half the time when there is one) or injects a new one; either
// may fail, and then changes nothing. A fault that makes nodes unavailable
// records them just before it acts, a heal just after they are back.
func (g *gen) fault() {
	failed := g.chance(0.15)
	typ, errText := history.Info, ""
	if failed {
		errText = "could not do it"
		if g.version >= 4 {
			typ = history.Fail
		}
	}
	if len(g.active) > 0 && g.chance(0.5) {
		op := history.Op{Process: history.NemesisProcess, Type: typ, F: history.FHealAll, Error: errText}
		if !g.chance(0.2) {
			op.F = g.active[g.pick(len(g.active))].heal
		}
		g.emit(op)
		if !failed {
			keep := g.active[:0]
			for _, a := range g.active {
				if op.F != history.FHealAll && a.heal != op.F {
					keep = append(keep, a)
				}
			}
			g.active = keep
			g.record()
		}
		return
	}
	kinds := clusterFaults()
	f := kinds[g.pick(len(kinds))]
	op := g.faultOp(typ, f, failed) // a fault that failed names no heal
	op.Error = errText
	var targets []string
	for i := range g.nodes {
		if g.chance(0.5) {
			targets = append(targets, "n"+strconv.Itoa(i+1))
		}
	}
	if len(targets) == 0 {
		targets = []string{"n1"}
	}
	op.Value = history.JSONValue(map[string]any{"targets": targets})
	if failed {
		g.emit(op)
		return
	}
	if f.Moment {
		// In force at its time only: nothing to heal, no node left down.
		g.tick()
		g.emit(op)
		return
	}
	a := activeFault{f: op.F, heal: f.Heal}
	if f.Unavailable != "" {
		a.down = targets
	}
	g.active = append(g.active, a)
	g.record()
	g.tick()
	g.emit(op)
}

// record writes an availability record when the nodes unavailable by the
// faults in force changed since the last one (from format version 3 on).
func (g *gen) record() {
	var down []string
	for i := range g.nodes {
		n := "n" + strconv.Itoa(i+1)
		for _, a := range g.active {
			if slices.Contains(a.down, n) {
				down = append(down, n)
				break
			}
		}
	}
	if slices.Equal(down, g.down) || g.version < 3 {
		return
	}
	g.down = down
	g.emit(history.AvailabilityOp(history.Availability{Nodes: g.nodes, Down: down}))
}

// majority reports whether a majority of the nodes is up (always without
// Faults).
func (g *gen) majority() bool {
	return !g.opts.Faults || history.Availability{Nodes: g.nodes, Down: g.down}.Majority()
}
