package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// ClockStrobe declares the clock strobe: the facts of the fault kind,
// which package nemesis pairs with its injector (nemesis.ClockStrobe).
func ClockStrobe() Facts {
	return Facts{
		Name: "clock-strobe",
		Description: "flip the nodes' wall clocks between the true time and offset every period (option, default 1s) until the heal; " +
			nodeTargets,
		Heal:    "clock-reset",
		Class:   history.ClassClock,
		Targets: TargetsNodes,
		Offset:  true,
		Tag:     "clock", Column: "clock jump",
	}
}
