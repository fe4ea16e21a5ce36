package nemesis

import (
	"fmt"
	"sort"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// StepTolerance is how much later than its time a step of the schedule (a
// fault, a heal step, or the heal that ends a fault with a Duration) may
// begin to act and still count as carried out as written (docs/history.md
// §1, "Steps that did not run as written"). Only the time in which the
// nemesis was not acting counts as late (lateness): a step due while
// another fault or heal acts waits for it, because the nemesis acts one at a
// time (docs/design.md §2), and that wait is the schedule as the nemesis
// carries it out. What is left is the harness being slow to begin it: a
// timer's wake-up and a goroutine's turn take microseconds, and tens of
// milliseconds on a loaded machine, so a quarter of a second is well clear
// of them, and still short beside the hundreds of milliseconds to seconds
// that scheduled faults last and the leases they test run for.
const StepTolerance = 250 * time.Millisecond

// noDue is the due time of an action that no step of the schedule timed:
// the heal of every fault still in force when the run ends.
const noDue time.Duration = -1

// StepIssue is a step of the schedule that did not run as written
// (docs/history.md §1, "Steps that did not run as written"): one never
// reached before the run ended (NotRun), or one that took effect more than
// StepTolerance late by the lateness rule (Late).
type StepIssue struct {
	Step Step
	// Heal is set when what was late is the heal that ends the step's
	// fault after its Duration, not the fault.
	Heal bool
	// NotRun is set for a step never reached.
	NotRun bool
	// Late is how late the step began to act, not counting the time it
	// waited for the nemesis's other faults and heals (lateness).
	Late time.Duration
}

// timing is when an action of the nemesis was due, and the step that timed
// it: heal is set for the heal that ends step's fault after its Duration.
// due is noDue for an action no step timed.
type timing struct {
	due  time.Duration
	step Step
	heal bool
}

// actionLog is the record of the nemesis's actions, each fault or heal it
// carried out, one at a time, in order: when each ended, and how long all
// of them up to it acted in all. lateness reads it.
type actionLog struct {
	ends []time.Duration
	busy []time.Duration // busy[i]: the acting time of actions 0..i
}

// add records an action that acted from begin to end, after every action
// recorded before.
func (l *actionLog) add(begin, end time.Duration) {
	total := end - begin
	if n := len(l.busy); n > 0 {
		total += l.busy[n-1]
	}
	l.ends = append(l.ends, end)
	l.busy = append(l.busy, total)
}

// actingSince returns how long the actions recorded acted after from.
func (l *actionLog) actingSince(from time.Duration) time.Duration {
	n := len(l.ends)
	i := sort.Search(n, func(i int) bool { return l.ends[i] > from })
	if i == n {
		return 0
	}
	before := time.Duration(0)
	if i > 0 {
		before = l.busy[i-1]
	}
	acting := l.busy[n-1] - before
	// The first of them may have begun before from.
	if begin := l.ends[i] - (l.busy[i] - before); begin < from {
		acting -= from - begin
	}
	return acting
}

// lateness returns how late an action due at due begins at begin, every
// action recorded in l having ended by then: the time from due to begin in
// which no other fault or heal was acting. Waiting for the nemesis's other
// actions is not lateness: it acts one at a time. An action due at 0 is never
// late, since the workers start only once every step due at 0 has acted
// (Runner.Begun); nor is one that no step timed (noDue).
func (l *actionLog) lateness(due, begin time.Duration) time.Duration {
	if due <= 0 || begin <= due {
		return 0
	}
	return max(0, begin-due-l.actingSince(due))
}

// notRunOp returns the op that records step as never reached before the
// run ended (at the end of its time, or interrupted): a fail op of its fault
// (for a heal step, of that heal) with its due time and an error saying so
// (docs/history.md §1, "Steps that did not run as written").
func notRunOp(step Step) history.Op {
	op := history.Op{Type: history.Fail, F: step.Fault, Value: history.JSONValue(step.String())}
	if f, err := Lookup(step.Fault); err == nil {
		op = faultOp(f.Facts(), history.Fail, op.Value, false)
	} else if step.Fault != "heal" && step.Fault != "heal-all" {
		op.Class = history.ClassOther
	}
	op.Error = fmt.Sprintf("not run: the run ended before its time, due at %v", step.At)
	due := step.At
	op.Due = &due
	return op
}
