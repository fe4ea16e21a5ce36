package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// Latency declares the latency: the facts of the fault kind,
// which package nemesis pairs with its injector (nemesis.Latency).
func Latency() Facts {
	return Facts{
		Name:        "latency",
		Description: "delay replies on the links; options delay (default 100ms), jitter (default 0); " + linkShapes,
		Heal:        "heal",
		Class:       history.ClassNetwork,
		Targets:     TargetsLinks,
		Proxies:     true,
		Tag:         "latency", Column: "latency",
	}
}
