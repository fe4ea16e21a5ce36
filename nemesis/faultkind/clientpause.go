package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// ClientPause declares the client pause: the facts of the fault kind,
// which package nemesis pairs with its injector (nemesis.ClientPause).
func ClientPause() Facts {
	return Facts{
		Name:        history.FClientPause,
		Description: clientPauseDescription,
		Heal:        history.FClientResume,
		Class:       history.ClassClientPause,
		Targets:     TargetsWorkers,
		Point:       true,
		Tag:         "gc-pause", Column: "process pause",
		// A campaign pauses before the write or after a response, with the
		// worker's links cut for the pause or not (isolate: a stop-the-world
		// pause of a Go Locker's whole process, whose library heartbeats
		// stop too, as an external client's do under SIGSTOP).
		Hunt: Hunt{
			Choices: map[string][]string{"isolate": {"false", "true"}},
			Points:  []string{"before-write", "after-response"},
		},
	}
}
