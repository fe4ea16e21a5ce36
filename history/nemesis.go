package history

import (
	"encoding/json"
	"slices"
	"strings"
)

// The nemesis ops' f values that readers of a history look for. A fault op is
// recorded when a fault begins and its heal op when it ends; both carry a
// value saying what was done to whom.
const (
	// FClientPause is recorded twice for a client pause: when the nemesis
	// arms it (value "armed": true) and when the worker actually stops.
	FClientPause = "client-pause"
	// FClientResume is recorded when a paused worker goes on.
	FClientResume = "client-resume"
	// FHealAll ends every fault still active.
	FHealAll = "heal-all"
	// FAvailability is the nemesis's availability record: not a fault and
	// not a heal, but which server nodes are down or cut off from the
	// workers from this op on (its value is an Availability). The nemesis
	// records one whenever that set changes; a history of format version 3
	// or later without one had every server node up throughout.
	FAvailability = "availability"
)

// Availability is the value of an availability record: Nodes is the number
// of server nodes a majority is counted over (sentinels are not server
// nodes), and Down names those that are down (killed, paused) or cut off
// from the workers, in the cluster's order.
type Availability struct {
	Nodes int      `json:"nodes"`
	Down  []string `json:"down"`
}

// Up returns the number of server nodes that are up.
func (a Availability) Up() int { return a.Nodes - len(a.Down) }

// Majority reports whether a majority of the server nodes is up:
// Up() ≥ Nodes/2 + 1.
func (a Availability) Majority() bool { return a.Nodes > 0 && a.Up() >= a.Nodes/2+1 }

// AvailabilityOf returns the value of an availability record, and false when
// op is not one or its value does not say how many nodes there are and
// which are down.
func AvailabilityOf(op Op) (Availability, bool) {
	if !op.IsAvailability() {
		return Availability{}, false
	}
	var raw struct {
		Nodes *int     `json:"nodes"`
		Down  []string `json:"down"`
	}
	if err := json.Unmarshal(op.Value, &raw); err != nil || raw.Nodes == nil || *raw.Nodes < len(raw.Down) {
		return Availability{}, false
	}
	return Availability{Nodes: *raw.Nodes, Down: raw.Down}, true
}

// AvailabilityOp returns the availability record of a, to be recorded by the
// nemesis.
func AvailabilityOp(a Availability) Op {
	if a.Down == nil {
		a.Down = []string{}
	}
	return Op{Process: NemesisProcess, Type: Info, F: FAvailability, Value: JSONValue(a)}
}

// IsAvailability reports whether op is an availability record.
func (o Op) IsAvailability() bool { return o.Process == NemesisProcess && o.F == FAvailability }

// IsRecord reports whether op is a nemesis-process op that records a state
// rather than a fault or a heal: the header op, an availability record, a
// task table record, the end record or a host record (a clock step or a
// stall). Readers that pair faults with heals, or look for the last fault,
// skip it.
func (o Op) IsRecord() bool {
	return o.IsHeader() || o.IsAvailability() || o.IsTasks() || o.IsEnd() || o.IsHostRecord()
}

// FEnd is the f of the end record: the last op of a history written by a
// run (format version 5 on), a nemesis-process info op recorded once every
// worker has stopped. It says until when the run recorded, so that an
// acquire still pending at the end is known to have waited until then, also
// when nothing else happened after it was invoked.
const FEnd = "end"

// EndOp returns the end record, to be recorded as the last op of a run.
func EndOp() Op { return Op{Process: NemesisProcess, Type: Info, F: FEnd} }

// IsEnd reports whether op is the end record.
func (o Op) IsEnd() bool { return o.Process == NemesisProcess && o.F == FEnd }

// FaultClass is the class of a fault: what kind of harm it does, which the
// report colours it by and the liveness checker reads (a clock fault skews a
// clock). Every fault kind declares its class (nemesis.Facts), and from
// format version 6 on every fault op records it.
type FaultClass string

// The fault classes, in the order of the report's legend.
const (
	// ClassNetwork cuts, resets or slows links.
	ClassNetwork FaultClass = "network"
	// ClassPause stops server nodes.
	ClassPause FaultClass = "pause"
	// ClassKill kills server nodes.
	ClassKill FaultClass = "kill"
	// ClassClock skews a clock, a node's or a worker's: while such a fault
	// is in force, and for a lease after its heal, a lease may last longer
	// than the history can say, as it is measured on the skewed clock.
	ClassClock FaultClass = "clock"
	// ClassClientPause stops workers.
	ClassClientPause FaultClass = "client-pause"
	// ClassFailover replaces a primary.
	ClassFailover FaultClass = "failover"
	// ClassOther is any other fault (an imported history's).
	ClassOther FaultClass = "other"
)

// FaultClasses returns every fault class, in the order of the report's
// legend.
func FaultClasses() []FaultClass {
	return []FaultClass{ClassNetwork, ClassPause, ClassKill, ClassClock, ClassClientPause, ClassFailover, ClassOther}
}

// SkewsClocks reports whether a fault of class c skews a clock (ClassClock).
func (c FaultClass) SkewsClocks() bool { return c == ClassClock }

// FaultOf returns what the nemesis fault op o says about its fault: the f of
// its heal ("" for a moment, a fault that has no heal) and its class. From
// format version 6 on, the op carries both (Heal, Class; a class not in
// FaultClasses reads as ClassOther). In a history of an
// earlier version they are the facts that version gave the fault's name
// (LegacyFault). version is the history's format version (Version).
func (o Op) FaultOf(version int) (heal string, class FaultClass) {
	if version >= 6 {
		if !slices.Contains(FaultClasses(), o.Class) {
			return o.Heal, ClassOther // a class this reader does not know
		}
		return o.Heal, o.Class
	}
	return LegacyFault(o.F)
}

// IsHealOp reports whether the nemesis op o ends faults rather than begins
// one: from format version 6 on, a nemesis op that is no record and carries
// no class (every fault op carries its own); in a history of an earlier
// version, one whose f is a heal's of that version (heal, heal-all, resume,
// start, clock-reset, client-clock-reset, client-resume). version is the
// history's format version (Version).
func (o Op) IsHealOp(version int) bool {
	if o.Process != NemesisProcess || o.IsRecord() {
		return false
	}
	if o.F == FHealAll {
		return true
	}
	if version >= 6 {
		return o.Class == ""
	}
	return legacyHeal(o.F)
}

// Heals reports whether the heal op o ends the fault op fault: o is heal-all,
// or its f is the fault's heal (FaultOf). version is the history's format
// version.
func (o Op) Heals(fault Op, version int) bool {
	if o.F == FHealAll {
		return true
	}
	heal, _ := fault.FaultOf(version)
	return heal != "" && o.F == heal
}

// HoldsRequests reports whether the fault op o, of a history of format
// version version, cuts links by dropping what crosses them: a fault of
// class network named partition (in an imported history also one whose
// name begins with partition, isolate or drop). What was sent across a
// cut link is not lost: TCP retransmits it, and it arrives after the heal
// (docs/history.md §4.5, "Requests held back by a cut").
func (o Op) HoldsRequests(version int) bool {
	if _, class := o.FaultOf(version); class != ClassNetwork {
		return false
	}
	return strings.HasPrefix(o.F, "partition") || o.F == "isolate" || o.F == "drop"
}

// LegacyFault returns the heal and class that a history of format version 1
// to 5, whose fault ops carry neither, gives the fault named f: the fault
// kinds of those versions by name (pause → resume, kill → start, clock-bump
// and clock-strobe → clock-reset, client-clock → client-clock-reset,
// client-pause → client-resume, and heal for partition, reset, latency,
// failover and sentinel-failover), and for an imported history's other
// names a class by their words and the heal heal (promote and restart are
// moments). The table is frozen: a fault kind added later records its own
// heal and class, and is never looked up here.
func LegacyFault(f string) (heal string, class FaultClass) {
	switch f {
	case "pause":
		return "resume", ClassPause
	case "kill":
		return "start", ClassKill
	case "clock-bump", "clock-strobe":
		return "clock-reset", ClassClock
	case "client-clock":
		return "client-clock-reset", ClassClock
	case FClientPause:
		return FClientResume, ClassClientPause
	case "partition", "reset", "latency":
		return "heal", ClassNetwork
	case "failover", "sentinel-failover":
		return "heal", ClassFailover
	case "promote", "restart":
		return "", ClassFailover
	}
	switch {
	case strings.HasPrefix(f, "clock"):
		return "heal", ClassClock
	case f == "crash":
		return "heal", ClassKill
	case f == "isolate" || f == "slow" || f == "drop" || strings.HasPrefix(f, "partition"):
		return "heal", ClassNetwork
	}
	return "heal", ClassOther
}

// legacyHeal reports whether f names a heal in a history of format version 1
// to 5.
func legacyHeal(f string) bool {
	switch f {
	case "heal", FHealAll, "resume", "start", "clock-reset", "client-clock-reset", FClientResume:
		return true
	}
	return false
}

// NemesisFailed reports whether the nemesis op o is a fault or a heal that
// did not take effect (docs/history.md §1, "Faults that failed"): from
// format version 4 on, one recorded as `fail` (with its `error`); in a
// history of an earlier version, where every failed fault or heal was
// recorded as an `info` with an `error`, one that carries an `error`. A
// fault that did not take effect was never in force; a heal that did not
// take effect left its fault in force. A fault recorded as `info` with an
// `error` (version 4 on) failed half-way: what it did is in force until its
// heal. Records (the header, availability) never fail. version is the
// history's format version (Version).
func (o Op) NemesisFailed(version int) bool {
	if o.Process != NemesisProcess || o.IsRecord() {
		return false
	}
	if version >= 4 {
		return o.Type == Fail
	}
	return o.Error != ""
}
