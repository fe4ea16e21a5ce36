// Package faultkind declares every fault kind's facts, once: its name, heal,
// class, targets, the draws a random schedule and a fault campaign make for
// it, and what the docs say of it. It imports nothing of the harness but
// history, so that an offline reader (the reference checker's generator)
// can know the fault kinds without the nemesis that injects them, the
// cluster and their servers' clients. Package nemesis pairs each kind with
// its injector (docs/design.md §9).
package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// All returns the facts of every fault kind, in the order `jepsen-lite list
// --faults` shows them and the docs' design × fault table orders its
// columns. It is the one list of fault kinds: nemesis.Faults pairs each with
// its injector, in this order.
func All() []Facts {
	return []Facts{
		ClientPause(),
		ClockBump(),
		ClockStrobe(),
		ClientClock(),
		Kill(),
		Restart(),
		Pause(),
		Failover(),
		SentinelFailover(),
		Partition(),
		Reset(),
		Latency(),
	}
}

// Of returns the facts of the fault kind called name, and false when there
// is no such kind.
func Of(name string) (Facts, bool) {
	for _, f := range All() {
		if f.Name == name {
			return f, true
		}
	}
	return Facts{}, false
}

// Facts are everything the harness, the report and the docs know about one
// fault kind, declared once, in the kind's own file of this package, and
// read by `list --faults`, scenario validation, random schedules, fault
// campaigns, the nemesis, the availability record, the history (each fault
// op records its heal and class, so offline readers need no fault names),
// the docs table and the reference checker's generator.
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
	// Offset says that the fault takes a clock offset
	// (nemesis.Step.Offset), which a random schedule draws.
	Offset bool
	// Point says that the fault takes a pause point (nemesis.Step.Point,
	// one of nemesis.PausePoints), which a random schedule draws from its
	// Points.
	Point bool
	// Proxies says that the fault needs the run's links to go through
	// proxies (linknet.WithProxies), which a run sets up only then.
	Proxies bool
	// Unavailable says which server nodes the fault makes unavailable in
	// the availability record, and until when; empty when it makes none
	// unavailable. A fault without it cannot take nodes down
	// (nemesis.Env's takeDown).
	Unavailable string
	// Systems are the systems whose nodes can take the fault ("redis",
	// ...); nil for every system. A step of another system is refused
	// before anything starts, unless it expects the failure. A fault that
	// skews node clocks declares none here: the systems whose clocks can be
	// skewed are the cluster's to say, and nemesis.Faults gives it those.
	Systems []string
	// Backends are the backends that can perform the fault ("local",
	// "docker"); nil for every backend.
	Backends []string
	// Tag is the scenario tag that marks the scenarios of the fault's
	// column in the docs' design × fault table, and Column that column's
	// title; faults that share a column share both.
	Tag, Column string
	// Hunt is what a fault campaign (package hunt) draws for the fault's
	// steps beyond the targets, offsets and durations that every kind's
	// schedule draws.
	Hunt Hunt
}

// Hunt are a fault kind's own draws in a fault campaign's schedule.
type Hunt struct {
	// Choices are the options drawn per step: for each option, the values
	// one of which a step takes (nemesis.RandomSpec's Choices); nil for
	// none.
	Choices map[string][]string
	// Points are the pause points drawn per step, for a fault that takes
	// one (Point); nil for none.
	Points []string
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

// TargetKinds returns every TargetKind.
func TargetKinds() []TargetKind {
	return []TargetKind{TargetsNodes, TargetsLinks, TargetsWorkers, TargetsReplica, TargetsNone}
}
