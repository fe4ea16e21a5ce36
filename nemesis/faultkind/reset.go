package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// Reset declares the reset: the facts of the fault kind,
// which package nemesis pairs with its injector (nemesis.Reset).
func Reset() Facts {
	return Facts{
		Name:        "reset",
		Description: "close every connection of the links with a RST and refuse new ones until the heal; " + linkShapes,
		Heal:        "heal",
		Class:       history.ClassNetwork,
		Targets:     TargetsLinks,
		Unavailable: linksUnavailable,
		Tag:         "reset", Column: "connection resets",
	}
}
