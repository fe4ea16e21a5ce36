package gate

import (
	"fmt"
	"strings"
)

// RunMarks marks a table's cell of runs runs of which host had a step of
// the host's clock or a stall of the harness (results.json host_events),
// and offScript a step of the schedule that did not run as written
// (step_issues): " [host 1/3, steps 2/3]", or "" when none had either.
func RunMarks(host, offScript, runs int) string {
	var marks []string
	if host > 0 {
		marks = append(marks, fmt.Sprintf("host %d/%d", host, runs))
	}
	if offScript > 0 {
		marks = append(marks, fmt.Sprintf("steps %d/%d", offScript, runs))
	}
	if len(marks) == 0 {
		return ""
	}
	return " [" + strings.Join(marks, ", ") + "]"
}

// RunMarksLegend explains RunMarks under a table that has some.
const RunMarksLegend = "[host n/m]: n of the m runs saw the host's wall clock step or the harness stall (results.json host_events), so what they found may come from the machine, not only from the lock or the fault; [steps n/m]: n of them had a step of the schedule that did not run as written (step_issues)."
