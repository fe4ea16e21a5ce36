package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// ClockBump declares the clock bump: the facts of the fault kind,
// which package nemesis pairs with its injector (nemesis.ClockBump).
func ClockBump() Facts {
	return Facts{
		Name:        "clock-bump",
		Description: "offset the nodes' wall clocks by offset (e.g. +30s) until the heal resets them; " + nodeTargets,
		Heal:        "clock-reset",
		Class:       history.ClassClock,
		Targets:     TargetsNodes,
		Offset:      true,
		Tag:         "clock", Column: "clock jump",
	}
}
