// queue_messages.go holds the wording of the queue stream's double-capture
// and stale-status anomalies, as the check over the whole history words
// them.

package checker

import (
	"fmt"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// staleAnomaly describes stale set-status w with the newer hold c.
func staleAnomaly(w *staleWait, c *queueHold) Anomaly {
	st, H, r := w.status, w.reapedHold, w.reap
	return Anomaly{Kind: StaleStatus, Key: w.task.name, Ops: []int{H.invoke, H.okIndex, r.invoke, r.done, c.invoke, c.okIndex, st.invoke, st.done},
		Message: fmt.Sprintf("%s set task %s to %s at %s, although a reaper pass had set it back at %s after %s's capture at %s, and %s had captured it again at %s and still held it",
			workerOf(st.client), w.task.name, st.status, secs(st.doneTime), secs(r.doneTime), workerOf(H.client), secs(H.okTime), workerOf(c.client), secs(c.okTime))}
}

// doubleCaptures appends the double-captures of hold a, the first as the
// cause's anomaly and the others as its followers.
func (s *queueStream) doubleCaptures(anomalies []Anomaly, a *queueHold) []Anomaly {
	e, at, reaped := a.end()
	ops := func(invoke, ok int) []int {
		out := []int{a.invoke, a.okIndex, invoke, ok}
		if e != Open {
			out = append(out, e)
		}
		return out
	}
	b := a.firstOverlap
	msg := fmt.Sprintf("%s captured task %s at %s while %s held it since its capture at %s", workerOf(b.client), a.task.name, secs(b.okTime), workerOf(a.client), secs(a.okTime))
	switch {
	case e == Open:
		msg += ", which neither set its status nor lost it to the reaper by the end"
	case reaped:
		msg += fmt.Sprintf(", and no reaper pass could have set it back before the one invoked at %s", secs(at))
	default:
		msg += fmt.Sprintf(", and did not give it up before its set-status at %s", secs(at))
	}
	if u, ok := b.undoing(); ok {
		done := "of unknown outcome"
		if u.typ == history.OK {
			done = "returned at " + secs(u.doneTime)
		}
		msg += fmt.Sprintf("; %s's set-status of %s to %s, invoked at %s and %s, may have taken effect after %s's capture and made it capturable under it",
			workerOf(u.client), a.task.name, u.status, secs(u.invTime), done, workerOf(a.client))
	}
	first := Anomaly{Kind: DoubleCapture, Key: a.task.name, Ops: ops(b.invoke, b.okIndex), Message: msg}
	for _, l := range a.laterOverlaps {
		first.Follows++
		first.Followers = append(first.Followers, ops(l[0], l[1]))
	}
	return append(anomalies, first)
}
