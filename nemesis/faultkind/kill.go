package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// Kill declares the kill: the facts of the fault kind,
// which package nemesis pairs with its injector (nemesis.Kill).
func Kill() Facts {
	return Facts{
		Name: "kill",
		Description: "kill the nodes (SIGKILL) until the heal starts them again with their data dir (kept or lost per system.persistence); " +
			nodeTargets + "; option restart-after (stay down at least this long); needs a cluster that can kill nodes",
		Heal:        "start",
		Class:       history.ClassKill,
		Targets:     TargetsNodes,
		Unavailable: "the nodes killed, until they are started",
		Tag:         "crash", Column: "crash + restart",
	}
}
