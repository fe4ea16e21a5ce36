package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// This file keeps the queue check as it was before it read its history as
// a stream; TestQueueStreamAsBatch holds the streaming check to it.

// batchQueue is the queue check as it was before it read its history as
// a stream: over the holds, set-statuses and reaps of the whole history
// that the shared definitions found (analyzeQueue).
func batchQueue(ctx context.Context, h history.History, f *Facts) Result {
	c := QueueChecker{}
	start := time.Now()
	if ctx.Err() != nil {
		return Result{Name: c.Name(), Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: stopNote(ctx)}
	}
	q := f.Queue
	var anomalies []Anomaly
	byTask := map[string][]int{} // task -> its holds, in the order of their oks
	for i := range q.Holds {
		byTask[q.Holds[i].Task] = append(byTask[q.Holds[i].Task], i)
	}
	tasks := make([]string, 0, len(byTask))
	for t := range byTask {
		tasks = append(tasks, t)
	}
	slices.Sort(tasks)
	for _, t := range tasks {
		if ctx.Err() != nil {
			return Result{Name: c.Name(), Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: stopNote(ctx)}
		}
		hs := byTask[t]
		// double-capture: a sweep in the order of the oks; each earlier
		// hold still open at a later hold's ok overlaps it, and the
		// overlaps of one earlier hold are one cause.
		var active []int
		group := map[int]int{}
		for _, b := range hs {
			hb := &q.Holds[b]
			active = slices.DeleteFunc(active, func(a int) bool { return q.Holds[a].End <= hb.OK })
			for _, a := range active {
				if q.Holds[a].Process == hb.Process {
					continue
				}
				anomalies = followCause(anomalies, group, a, doubleCapture(h, q, a, b))
			}
			active = append(active, b)
		}
		if s, ok := q.Specs[t]; ok && s.Budget != nil && len(hs) > *s.Budget {
			x := &q.Holds[hs[*s.Budget]]
			anomalies = append(anomalies, Anomaly{Kind: BudgetOverspent, Key: t, Ops: []int{q.SpecOp, x.Invoke, x.OK},
				Message: fmt.Sprintf("task %s has a budget of %d captures in the task table, but it was captured %d times: capture %d of it by %s returned at %s",
					t, *s.Budget, len(hs), *s.Budget+1, worker(h[x.OK]), secs(h[x.OK].Time))})
		}
	}
	// cross-queue
	for i := range q.Holds {
		ho := &q.Holds[i]
		e := capturedEntry(h, ho)
		queue, spec := q.TaskQueue(ho.Task, e)
		if queue == "" || queue == ho.Queue {
			continue
		}
		ops := []int{ho.Invoke, ho.OK}
		where := "its capture says"
		if spec >= 0 {
			ops = append([]int{spec}, ops...)
			where = "the task table says"
		}
		anomalies = append(anomalies, Anomaly{Kind: CrossQueue, Key: ho.Task, Ops: ops,
			Message: fmt.Sprintf("%s's capture of queue %s returned task %s at %s, which is of queue %s, as %s", worker(h[ho.OK]), ho.Queue, ho.Task, secs(h[ho.OK].Time), queue, where)})
	}
	anomalies = append(anomalies, staleStatuses(h, q, byTask)...)
	anomalies = append(anomalies, q.readingsAnomalies(h, anomalies)...)
	return finish(c.Name(), start, anomalies, "")
}

// doubleCapture describes the overlap of hold a with the later hold b.
func doubleCapture(h history.History, q *QueueFacts, a, b int) Anomaly {
	ha, hb := &q.Holds[a], &q.Holds[b]
	ops := []int{ha.Invoke, ha.OK, hb.Invoke, hb.OK}
	msg := fmt.Sprintf("%s captured task %s at %s while %s held it since its capture at %s", worker(h[hb.OK]), ha.Task, secs(h[hb.OK].Time), worker(h[ha.OK]), secs(h[ha.OK].Time))
	switch {
	case ha.End == Open:
		msg += ", which neither set its status nor lost it to the reaper by the end"
	case ha.Reaped:
		ops = append(ops, ha.End)
		msg += fmt.Sprintf(", and no reaper pass could have set it back before the one invoked at %s", secs(h[ha.End].Time))
	default:
		ops = append(ops, ha.End)
		msg += fmt.Sprintf(", and did not give it up before its set-status at %s", secs(h[ha.End].Time))
	}
	if s := undoingStatus(q, ha, hb); s != nil {
		done := "of unknown outcome"
		if s.Type == history.OK {
			done = "returned at " + secs(h[s.Done].Time)
		}
		msg += fmt.Sprintf("; %s's set-status of %s to %s, invoked at %s and %s, may have taken effect after %s's capture and made it capturable under it",
			worker(h[s.Invoke]), ha.Task, s.Status, secs(h[s.Invoke].Time), done, worker(h[ha.OK]))
	}
	return Anomaly{Kind: DoubleCapture, Key: ha.Task, Ops: ops, Message: msg}
}

// undoingStatus returns the last set-status that may have undone hold a's
// capture before the later hold b's capture took the task (docs/history.md
// §4.7, double-capture): of a's task, by another process than a's, not
// failed, invoked before b's ok and, when ok, completed after a's capture
// was invoked (one of unknown outcome may take effect at any time after its
// invoke); nil when none.
func undoingStatus(q *QueueFacts, a, b *Hold) *StatusSet {
	var out *StatusSet
	for k := range q.Statuses {
		s := &q.Statuses[k]
		if s.Invoke >= b.OK {
			break
		}
		if s.Task == a.Task && s.Process != a.Process && s.Type != history.Fail && (s.Type != history.OK || s.Done > a.Invoke) {
			out = s
		}
	}
	return out
}

// staleStatuses finds every set-status ok S of task t by process p whose
// hold H (p's latest hold of t with its ok before S's invoke) a reaper pass
// R naming t ended (R invoked after H's ok, completed before S's invoke),
// while a hold C of t by another process, captured after R completed and
// returned before S's invoke, was still open after S returned.
func staleStatuses(h history.History, q *QueueFacts, byTask map[string][]int) []Anomaly {
	var out []Anomaly
	for _, s := range q.Statuses {
		if s.Type != history.OK {
			continue
		}
		hs := byTask[s.Task]
		hold := -1
		for _, i := range hs {
			if ho := &q.Holds[i]; ho.Process == s.Process && ho.OK < s.Invoke {
				hold = i
			}
		}
		if hold < 0 {
			continue
		}
		H := &q.Holds[hold]
		// of the reaps naming t that ended H and completed before S, the
		// first to complete
		var reap *Reap
		for k := range q.Reaps {
			r := &q.Reaps[k]
			if !r.Unknown && r.Invoke > H.OK && r.Done >= 0 && r.Done < s.Invoke && slices.Contains(r.Tasks, s.Task) && (reap == nil || r.Done < reap.Done) {
				reap = r
			}
		}
		if reap == nil {
			continue
		}
		newer := -1
		for _, i := range hs {
			if c := &q.Holds[i]; c.Process != s.Process && c.Invoke > reap.Done && c.OK < s.Invoke && c.End > s.Done {
				newer = i
				break
			}
		}
		if newer < 0 {
			continue
		}
		C := &q.Holds[newer]
		out = append(out, Anomaly{Kind: StaleStatus, Key: s.Task, Ops: []int{H.Invoke, H.OK, reap.Invoke, reap.Done, C.Invoke, C.OK, s.Invoke, s.Done},
			Message: fmt.Sprintf("%s set task %s to %s at %s, although a reaper pass had set it back at %s after %s's capture at %s, and %s had captured it again at %s and still held it",
				worker(h[s.Invoke]), s.Task, s.Status, secs(h[s.Done].Time), secs(h[reap.Done].Time), worker(h[H.OK]), secs(h[H.OK].Time), worker(h[C.OK]), secs(h[C.OK].Time))})
	}
	slices.SortStableFunc(out, func(a, b Anomaly) int { return cmp.Compare(a.Ops[6], b.Ops[6]) })
	return out
}
