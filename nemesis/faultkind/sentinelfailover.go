package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// SentinelFailover declares the sentinel failover: the facts of the fault kind,
// which package nemesis pairs with its injector (nemesis.SentinelFailover).
func SentinelFailover() Facts {
	return Facts{
		Name: "sentinel-failover",
		Description: "pause (option how: pause|kill) the redis primary until the sentinels promote a replica (options master, default mymaster; timeout, default 30s), " +
			"then switch the workers' primary links to it; the heal brings the old primary back as a replica; needs the sentinel topology",
		Heal:        "heal",
		Class:       history.ClassFailover,
		Targets:     TargetsNone,
		Unavailable: "the old primary it pauses or kills, until the heal brings it back",
		Systems:     []string{"redis"},
		Tag:         "failover", Column: "async failover",
	}
}
