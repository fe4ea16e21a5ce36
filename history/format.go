package history

import (
	"encoding/json"
)

// FormatVersion is the version of the history format this package writes.
// Version 1 histories (written before the header op existed) have no `lease`
// or `session` fields: the acquire invoke's `ttl` stands for the lease there.
// Version 2 added `lease` and `session`, and `applied` only where the
// harness knows the moment exactly. Version 3 added `kept` on an info whose
// worker kept its lock client, and the nemesis's `availability` record.
// Version 4 records a fault or heal that did not take effect as a nemesis
// `fail` op with its `error` (Op.NemesisFailed). Version 5 added the queue
// workload's ops: capture, set-status, reap and the task table record.
// Version 6 records on every fault op its heal and class (Op.FaultOf), so
// that a reader pairs faults with heals and tells clock faults without
// knowing the fault kinds by name. Version 7 records a step of the schedule
// that did not run as written: `due` on a nemesis fault or heal op that took
// effect late, and a `fail` op with `due` for a step never reached
// (Op.NotRun, Op.LateBy), and the host records clock-step and stall
// (HostEventOf).
// Every version is read by Read and ReadFile; docs/history.md is the
// specification.
const FormatVersion = 7

// FHistory is the f of the header op: the first op of a history written by
// a run, a nemesis-process info op whose value names the format and its
// version. Checkers, statistics and the report ignore it.
const FHistory = "history"

// FormatName is the value of the header op's "format" field.
const FormatName = "jepsen-lite"

// Header returns the header op of a history of the current format version,
// to be recorded as the first op of a run.
func Header() Op {
	v, _ := json.Marshal(struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}{FormatName, FormatVersion})
	return Op{Process: NemesisProcess, Type: Info, F: FHistory, Value: v}
}

// IsHeader reports whether op is a header op.
func (o Op) IsHeader() bool { return o.Process == NemesisProcess && o.F == FHistory }

// Version returns the format version of h: the version its header op names,
// or 1 when it has none (histories written before the header existed).
func Version(h History) int {
	if len(h) == 0 || !h[0].IsHeader() {
		return 1
	}
	var v struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(h[0].Value, &v); err != nil || v.Version < 1 {
		return 1
	}
	return v.Version
}

// DropReplyTimes applies the version 1 rule for a register kept in the
// locked system (docs/history.md, "The header op and versions"): such a
// history recorded the reply's time as a write's `applied`, which is not the
// moment the write took effect, so it is cleared, in place. Histories of
// version 2 and later, and registers of the harness's own, are left as they
// are; guarded says whether the run's register was kept in the locked system.
func DropReplyTimes(h History, guarded bool) {
	if !guarded || Version(h) >= 2 {
		return
	}
	for i := range h {
		if h[i].F == FWrite {
			h[i].Applied = 0
		}
	}
}
