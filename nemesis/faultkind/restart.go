package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// Restart declares the restart: the facts of the fault kind,
// which package nemesis pairs with its injector (nemesis.Restart).
func Restart() Facts {
	return Facts{
		Name: "restart",
		Description: "kill the nodes (SIGKILL) and start them again at once with their data dir (kept or lost per system.persistence): a moment, with no heal and no duration; " +
			nodeTargets + "; needs a cluster that can kill nodes",
		Moment:      true,
		Class:       history.ClassKill,
		Targets:     TargetsNodes,
		Unavailable: "the nodes restarted, from their kill until they have started again",
		Tag:         "crash", Column: "crash + restart",
	}
}
