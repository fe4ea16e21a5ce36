package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// Faults returns every fault kind, in the order `jepsen-lite list --faults`
// shows them and the docs' design × fault table orders its columns. It is the
// one list of fault kinds: adding a fault is its own file (a type with Facts,
// Available, Check and Inject) plus one line here.
func Faults() []Fault {
	return []Fault{
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
	}
}

// Facts are everything the harness, the report and the docs know about one
// fault kind, declared once, in the kind's own file (its Facts method), and
// read by `list --faults`, scenario validation, random schedules, the
// nemesis, the availability record, the history (each fault op records its
// heal and class, so offline readers need no fault names), the docs table
// and the reference checker's generator.
type Facts struct {
	// Name is what scenarios call the fault.
	Name string
	// Description says what the fault does and what it takes, for
	// `list --faults`.
	Description string
	// Heal is the f the nemesis records when the fault is healed; empty
	// for a moment.
	Heal string
	// Moment says that the fault acts at one instant and has no heal: the
	// report draws it as a line. A fault that is not a moment has a Heal,
	// and the report draws it from its op to its heal's.
	Moment bool
	// Class is the fault's class: the report's colour, and whether it
	// skews a clock (history.ClassClock), which the liveness checker reads.
	Class history.FaultClass
	// Targets is what a step's targets name, and so what a random schedule
	// draws for it.
	Targets TargetKind
	// Offset says that the fault takes a clock offset (Step.Offset), which
	// a random schedule draws.
	Offset bool
	// Point says that the fault takes a pause point (Step.Point, one of
	// PausePoints), which a random schedule draws from its Points.
	Point bool
	// Proxies says that the fault needs the run's links to go through
	// proxies (linknet.WithProxies), which a run sets up only then.
	Proxies bool
	// Unavailable says which server nodes the fault makes unavailable in
	// the availability record, and until when; empty when it makes none
	// unavailable. A fault without it cannot take nodes down
	// (Env.takeDown).
	Unavailable string
	// Systems are the systems whose nodes can take the fault (cluster.Redis,
	// ...); nil for every system. A step of another system is refused
	// before anything starts, unless it expects the failure.
	Systems []string
	// Backends are the backends that can perform the fault ("local",
	// "docker"); nil for every backend.
	Backends []string
	// Tag is the scenario tag that marks the scenarios of the fault's
	// column in the docs' design × fault table, and Column that column's
	// title; faults that share a column share both.
	Tag, Column string
}

// TargetKind is what a fault's step targets name.
type TargetKind string

// The kinds of targets.
const (
	// TargetsNodes are server nodes: names or a spec (one, minority,
	// majority, all, primaries, replicas).
	TargetsNodes TargetKind = "nodes"
	// TargetsLinks are the links of nodes (as TargetsNodes), of halves, or
	// of workers: the network faults'.
	TargetsLinks TargetKind = "links"
	// TargetsWorkers are workers: w0, w1, or a spec (one, minority,
	// majority, all).
	TargetsWorkers TargetKind = "workers"
	// TargetsReplica is at most one node, the replica to promote; a random
	// schedule gives none.
	TargetsReplica TargetKind = "replica"
	// TargetsNone takes no targets.
	TargetsNone TargetKind = "none"
)

// targetKinds lists every TargetKind.
var targetKinds = []TargetKind{TargetsNodes, TargetsLinks, TargetsWorkers, TargetsReplica, TargetsNone}

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

// op returns the history op of a fault of these facts: its f, its class, and
// its heal when heals says that a heal op will end it (a fault that failed,
// or that ends on its own, has none).
func (f Facts) op(typ history.Type, value []byte, heals bool) history.Op {
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
