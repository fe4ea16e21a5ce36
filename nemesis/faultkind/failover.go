package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// Failover declares the failover: the facts of the fault kind,
// which package nemesis pairs with its injector (nemesis.Failover).
func Failover() Facts {
	return Facts{
		Name: "failover",
		Description: "cut replication into the redis primary, wait lag (option, default 0), promote a replica (target, default the first replica), " +
			"switch the workers' primary links to it; heal (option): rejoin (old primary follows the new one, default) or keep; " +
			"needs the primary-replica topology",
		Heal:    "heal",
		Class:   history.ClassFailover,
		Targets: TargetsReplica,
		Systems: []string{"redis"},
		Tag:     "failover", Column: "async failover",
	}
}
