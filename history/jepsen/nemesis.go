package jepsen

import "github.com/jepsen-lite/jepsen-lite/history"

// Jepsen's nemeses name their faults and heals in their own words, and one
// word means two things: jepsen.nemesis's partitioner (and its
// node-start-stopper) begins a fault with :start and heals it with :stop,
// while jepsen.nemesis.combined's db nemesis kills with :kill and restarts
// with :start. An import is read as format version 1 (it has no header op),
// whose faults are known by their names (history.LegacyFault), so the
// import renames each Jepsen fault and heal to the name of that version
// that says what it does (docs/history.md §5, "Faults").

// jepsenFaults maps the nemesis f values of jepsen.nemesis.combined that
// differ from this format's names to those names.
var jepsenFaults = map[string]string{
	"start-partition": "partition", // a cut, healed by heal
	"stop-partition":  "heal",
	"start-packet":    "drop", // packets delayed, lost or corrupted: read as a cut, which excuses the most
	"stop-packet":     "heal",
	"bump-clock":      "clock-bump",
	"strobe-clock":    "clock-strobe",
	"reset-clock":     "clock-reset",
}

// Jepsen's nemesis f values that name a fault by context.
const (
	jepsenKill  = "kill"  // jepsen.nemesis.combined's db nemesis kills
	jepsenStart = "start" // which that nemesis's :start heals; else :start begins a fault
)

// nameFaults renames the nemesis ops of h to the faults and heals of this
// format (jepsenFaults). A :start is the heal of a kill when the history
// has a :kill nemesis op (jepsen.nemesis.combined's db nemesis); otherwise
// it begins the fault that the next :stop heals, and is read as a
// partition: the cut, of all the faults :start may begin, whose requests
// held back excuse the most, so that the reading never claims more than the
// ops prove. :stop keeps its name: it heals every fault in force.
func nameFaults(h history.History) {
	kills := false
	for i := range h {
		kills = kills || (h[i].Process == history.NemesisProcess && h[i].F == jepsenKill)
	}
	for i := range h {
		op := &h[i]
		if op.Process != history.NemesisProcess {
			continue
		}
		if f, ok := jepsenFaults[op.F]; ok {
			op.F = f
		} else if op.F == jepsenStart && !kills {
			op.F = "partition"
		}
	}
}
