package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// ClientClock declares the client clock: the facts of the fault kind,
// which package nemesis pairs with its injector (nemesis.ClientClock).
func ClientClock() Facts {
	return Facts{
		Name:        "client-clock",
		Description: "offset the wall clock of workers (targets w0, w1, one, minority, majority, all) by offset until the heal; for locks that send client timestamps",
		Heal:        "client-clock-reset",
		Class:       history.ClassClock,
		Targets:     TargetsWorkers,
		Offset:      true,
		Tag:         "clock", Column: "clock jump",
	}
}
