package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// Faults returns every fault kind with its injector, in the order of the one
// list of fault kinds, faultkind.All. Adding a fault is its facts (a file of
// package faultkind and a line of faultkind.All), its injector (a file here:
// a type with Facts, Available, Check and Inject) and a line of injectors.
func Faults() []Fault {
	var out []Fault
	for _, f := range faultkind.All() {
		if k, ok := injectors[f.Name]; ok {
			out = append(out, k)
		}
	}
	return out
}

// injectors pairs each fault kind, by name, with the type that injects it.
// TestEveryKindHasItsInjector holds it to faultkind.All.
var injectors = byName(
	ClientPause{},
	ClockBump{},
	ClockStrobe{},
	ClientClock{},
	Kill{},
	Restart{},
	Pause{},
	Failover{},
	SentinelFailover{},
	Partition{},
	Reset{},
	Latency{},
)

// byName returns the faults keyed by their names.
func byName(faults ...Fault) map[string]Fault {
	out := make(map[string]Fault, len(faults))
	for _, f := range faults {
		out[f.Facts().Name] = f
	}
	return out
}

// Facts are a fault kind's facts (faultkind.Facts), named here for the
// nemesis's readers.
type Facts = faultkind.Facts

// TargetKind is what a fault's step targets name (faultkind.TargetKind).
type TargetKind = faultkind.TargetKind

// The kinds of targets, as faultkind declares them.
const (
	TargetsNodes   = faultkind.TargetsNodes
	TargetsLinks   = faultkind.TargetsLinks
	TargetsWorkers = faultkind.TargetsWorkers
	TargetsReplica = faultkind.TargetsReplica
	TargetsNone    = faultkind.TargetsNone
)

// FactsOf returns the facts of the fault called name, and false when there
// is no such fault.
func FactsOf(name string) (Facts, bool) {
	for _, f := range Faults() {
		if x := f.Facts(); x.Name == name {
			return x, true
		}
	}
	return Facts{}, false
}

// ErrSystem reports a fault step on a system whose nodes cannot take the
// fault (Facts.Systems).
var ErrSystem = errors.New("nemesis: the system cannot take the fault")

// CheckSystem checks that the step's fault can act on the nodes of system
// (Facts.Systems), before anything starts: a step that expects its failure
// (Step.ExpectFailure) is let through, to be recorded as failed. heal,
// heal-all and unknown faults are left to CheckStep.
func CheckSystem(step Step, system string) error {
	f, ok := FactsOf(step.Fault)
	if !ok || step.ExpectFailure || f.Systems == nil || slices.Contains(f.Systems, system) {
		return nil
	}
	return fmt.Errorf("%w: %s cannot act on %s nodes (it acts on %s)", ErrSystem, f.Name, system, strings.Join(f.Systems, ", "))
}

// faultOp returns the history op of a fault of facts f: its f, its class, and
// its heal when heals says that a heal op will end it (a fault that failed,
// or that ends on its own, has none).
func faultOp(f Facts, typ history.Type, value []byte, heals bool) history.Op {
	op := history.Op{Type: typ, F: f.Name, Class: f.Class, Value: value}
	if heals {
		op.Heal = f.Heal
	}
	return op
}

// SkewsNodeClocks reports whether a step of steps skews node clocks (a fault
// of class clock that targets nodes) and expects that to work: the run's
// cluster must then be able to.
func SkewsNodeClocks(steps []Step) bool {
	return slices.ContainsFunc(steps, func(st Step) bool {
		f, _ := FactsOf(st.Fault)
		return f.Class == history.ClassClock && f.Targets == TargetsNodes && !st.ExpectFailure
	})
}

// SkewsWorkerClocks reports whether a step of steps skews a worker's clock (a
// fault of class clock that targets workers).
func SkewsWorkerClocks(steps []Step) bool {
	return slices.ContainsFunc(steps, func(st Step) bool {
		f, _ := FactsOf(st.Fault)
		return f.Class == history.ClassClock && f.Targets == TargetsWorkers
	})
}

// NeedsProxies reports whether a step of steps needs the run's links to go
// through proxies (Facts.Proxies).
func NeedsProxies(steps []Step) bool {
	return slices.ContainsFunc(steps, func(st Step) bool {
		f, _ := FactsOf(st.Fault)
		return f.Proxies
	})
}
