package faultkind

import "github.com/jepsen-lite/jepsen-lite/history"

// Partition declares the partition: the facts of the fault kind,
// which package nemesis pairs with its injector (nemesis.Partition).
func Partition() Facts {
	return Facts{
		Name: "partition",
		Description: "cut links, holding connections open and dropping packets until the heal delivers what waited; " +
			"option direction: both (default), inbound (nothing reaches the isolated side), outbound (nothing leaves it); " + linkShapes,
		Heal:        "heal",
		Class:       history.ClassNetwork,
		Targets:     TargetsLinks,
		Unavailable: linksUnavailable,
		Tag:         "partition", Column: "partitions",
		// A campaign drops both ways, or only what reaches or what leaves
		// the isolated side.
		Hunt: Hunt{Choices: map[string][]string{"direction": {"both", "inbound", "outbound"}}},
	}
}
