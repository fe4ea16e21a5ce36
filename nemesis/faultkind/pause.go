package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// Pause declares the pause: the facts of the fault kind,
// which package nemesis pairs with its injector (nemesis.Pause).
func Pause() Facts {
	return Facts{
		Name:        "pause",
		Description: "stop the nodes' processes (SIGSTOP) until the heal resumes them; " + nodeTargets + "; needs a cluster that can pause nodes",
		Heal:        "resume",
		Class:       history.ClassPause,
		Targets:     TargetsNodes,
		Unavailable: "the nodes paused, until they are resumed",
		Tag:         "node-pause", Column: "node pause",
	}
}
