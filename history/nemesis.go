package history

import "encoding/json"

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
// rather than a fault or a heal: the header op, an availability record or
// a task table record. Readers that pair faults with heals, or look for the
// last fault, skip it.
func (o Op) IsRecord() bool { return o.IsHeader() || o.IsAvailability() || o.IsTasks() || o.IsEnd() }

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

// HealOf returns the f recorded when the fault named fault is healed:
// pause → resume, kill → start, clock-bump and clock-strobe → clock-reset,
// client-clock → client-clock-reset, client-pause → client-resume, and heal
// for every other fault (partitions, resets, latency, failovers).
func HealOf(fault string) string {
	switch fault {
	case "pause":
		return "resume"
	case "kill":
		return "start"
	case "clock-bump", "clock-strobe":
		return "clock-reset"
	case "client-clock":
		return "client-clock-reset"
	case FClientPause:
		return FClientResume
	default:
		return "heal"
	}
}

// SkewsClocks reports whether the fault named f skews a clock (a node's or a
// worker's): while it is in force, and for a lease after its heal, a lease
// may last longer than the history can say, as it is measured on the
// skewed clock. HealOf(f) names its heal.
func SkewsClocks(f string) bool {
	switch f {
	case "clock-bump", "clock-strobe", "client-clock":
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

// IsHeal reports whether f names the end of a fault rather than a fault. A
// record (FHistory, FAvailability) is neither: see Op.IsRecord.
func IsHeal(f string) bool {
	switch f {
	case "heal", FHealAll, "resume", "start", "clock-reset", "client-clock-reset", FClientResume:
		return true
	}
	return false
}
