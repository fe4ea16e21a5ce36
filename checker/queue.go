package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// The queue workload's anomaly kinds (docs/history.md §4.7), under the
// names package anomaly declares.
const (
	DoubleCapture   = anomaly.DoubleCapture
	BudgetOverspent = anomaly.BudgetOverspent
	CrossQueue      = anomaly.CrossQueue
	StaleStatus     = anomaly.StaleStatus
	// LostTask is the liveness anomaly of a task left in progress with
	// nobody to finish or free it, or capturable with budget left and
	// never captured (again) although asked for.
	LostTask = anomaly.LostTask
)

// TaskKinds returns the anomaly kinds whose Key is a task (anomaly.Kind's
// Task): the queue checker's and lost-task, in the order of
// docs/history.md §4.7.
func TaskKinds() []string {
	return anomaly.Names(func(k anomaly.Kind) bool { return k.Task })
}

// QueueChecker is the checker "queue": it judges the queue workload's
// promises (docs/history.md §4.7) over the holds of tasks (tasks.go):
// double-capture (two holds of one task by different processes overlap),
// budget-overspent (a task captured more times than its budget),
// cross-queue (a capture returned a task of another queue) and
// stale-status (a set-status, by a process whose hold the reaper had ended,
// that took effect while a newer capture of the task held it). A history
// without queue ops is valid.
type QueueChecker struct{}

var _ Checker = QueueChecker{}

// Name returns "queue".
func (QueueChecker) Name() string { return anomaly.CheckerQueue }

// Check judges the queue ops of h.
func (c QueueChecker) Check(ctx context.Context, h history.History) Result {
	return runValidated(ctx, c.Name(), h, c.checkValid)
}

func (c QueueChecker) checkValid(ctx context.Context, h history.History) Result {
	return c.checkFacts(ctx, h, Analyze(h))
}

func (c QueueChecker) checkFacts(ctx context.Context, h history.History, f *Facts) Result {
	start := time.Now()
	if ctx.Err() != nil {
		return Result{Name: c.Name(), Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: "timed out: " + ctx.Err().Error()}
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
			return Result{Name: c.Name(), Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: "timed out: " + ctx.Err().Error()}
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
	return finish(c.Name(), start, anomalies, "")
}

// capturedEntry returns the entry of hold ho in its capture ok's value.
func capturedEntry(h history.History, ho *Hold) history.CapturedTask {
	ts, _ := history.CapturedOf(h[ho.OK])
	for _, t := range ts {
		if t.Task == ho.Task {
			return t
		}
	}
	return history.CapturedTask{Task: ho.Task}
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

// lostTasks finds the lost-task anomalies of docs/history.md §4.7 over a
// history that ends at end: a task whose last hold stayed open to the end,
// whose process crashed, with no set-status of the task after the hold and
// no reaper pass invoked after the crash that could have freed it
// (couldFree); a task of the task table, with budget left, that no capture
// returned, although a capture ok of its queue returned fewer tasks than
// its limit and no capture of that queue was of unknown outcome; and a task
// passed over (passedOver).
func lostTasks(h history.History, q *QueueFacts) []Anomaly {
	var out []Anomaly
	if len(h) == 0 {
		return out
	}
	end := h[len(h)-1].Time
	last := map[string]int{}
	captured := map[string]bool{}
	for i := range q.Holds {
		last[q.Holds[i].Task] = i
		captured[q.Holds[i].Task] = true
	}
	lastStatus := map[string]int{}
	for _, s := range q.Statuses {
		if s.Type != history.Fail {
			lastStatus[s.Task] = s.Invoke
		}
	}
	got := map[int]int{}      // capture ok -> how many tasks it returned
	least := map[string]int{} // task -> the least budget its capture oks give
	for i := range q.Holds {
		ho := &q.Holds[i]
		got[ho.OK]++
		if b := capturedEntry(h, ho).Budget; b != nil {
			if l, ok := least[ho.Task]; !ok || *b < l {
				least[ho.Task] = *b
			}
		}
	}
	shorts := map[string][]int{} // queue -> its capture oks that returned fewer tasks than their limits, in order
	for ok, limit := range q.Limits {
		if int64(got[ok]) < limit {
			shorts[h[ok].Key] = append(shorts[h[ok].Key], ok)
		}
	}
	for _, v := range shorts {
		slices.Sort(v)
	}
	for t, i := range last {
		ho := &q.Holds[i]
		if a, ok := passedOver(h, q, ho, least, shorts); ok {
			out = append(out, a)
			continue
		}
		crash, crashed := q.Crash[ho.Process]
		if ho.End != Open || !crashed || crash < ho.OK {
			continue
		}
		if slices.ContainsFunc(q.Reaps, func(r Reap) bool { return r.Invoke > crash && couldFree(h, r, ho) }) {
			continue
		}
		if s, ok := lastStatus[t]; ok && s > ho.OK {
			continue
		}
		out = append(out, Anomaly{Kind: LostTask, Key: t, Ops: []int{ho.Invoke, ho.OK, crash},
			Window: &Window{Start: h[crash].Time, End: end},
			Message: fmt.Sprintf("task %s stayed in progress from %s's capture at %s to the end: its process crashed at %s without setting its status, and no reaper pass that could have freed it came after",
				t, worker(h[ho.OK]), secs(h[ho.OK].Time), secs(h[crash].Time))})
	}
	if q.SpecOp >= 0 {
		for t, s := range q.Specs {
			if captured[t] || (s.Budget != nil && *s.Budget == 0) || len(q.UnknownCaptures[s.Queue]) > 0 || len(shorts[s.Queue]) == 0 {
				continue
			}
			// the first capture ok of its queue that returned fewer tasks than its limit
			ok := shorts[s.Queue][0]
			inv := captureInvoke(h, ok)
			out = append(out, Anomaly{Kind: LostTask, Key: t, Ops: []int{q.SpecOp, inv, ok},
				Window: &Window{Start: h[inv].Time, End: end},
				Message: fmt.Sprintf("task %s of queue %s was never captured, although it was capturable throughout (done from the start, with budget left) and %s's capture of %s at %s asked for %d tasks and got %d",
					t, s.Queue, worker(h[ok]), s.Queue, secs(h[ok].Time), q.Limits[ok], got[ok])})
		}
	}
	slices.SortFunc(out, func(a, b Anomaly) int { return cmp.Or(cmp.Compare(a.Key, b.Key), slices.Compare(a.Ops, b.Ops)) })
	return out
}

// passedOver reports whether the task of c, its last hold (the latest
// capture ok naming it), was passed over (docs/history.md §4.7,
// lost-task): a set-status ok S of the task to done or failed was invoked
// after c's ok, with budget left (the least budget the capture oks of the
// task give is positive, c's giving one; or none gives one and the task
// table lists the task without a budget), no capture of its queue of
// unknown outcome could have taken effect after c's invoke (none pending,
// none whose info came after c's invoke), and a capture ok of its queue
// invoked after S's ok returned fewer tasks than its limit. The anomaly
// names c, the S with the earliest ok and the first such capture (by its
// ok). least maps a task to the least budget its capture oks give, shorts
// a queue to its capture oks that returned fewer tasks than their limits.
func passedOver(h history.History, q *QueueFacts, c *Hold, least map[string]int, shorts map[string][]int) (Anomaly, bool) {
	e := capturedEntry(h, c)
	budget := -1 // -1: the task has none
	if e.Budget != nil {
		budget = least[c.Task]
		if budget <= 0 {
			return Anomaly{}, false
		}
	} else if s, listed := q.Specs[c.Task]; !listed || s.Budget != nil {
		return Anomaly{}, false
	}
	queue, _ := q.TaskQueue(c.Task, e)
	if queue == "" {
		queue = c.Queue
	}
	if u := q.UnknownCaptures[queue]; len(u) > 0 && u[len(u)-1] > c.Invoke {
		return Anomaly{}, false
	}
	var set *StatusSet
	for k := range q.Statuses {
		s := &q.Statuses[k]
		if s.Task == c.Task && s.Type == history.OK && (s.Status == history.StatusDone || s.Status == history.StatusFailed) &&
			s.Invoke > c.OK && (set == nil || s.Done < set.Done) {
			set = s
		}
	}
	if set == nil {
		return Anomaly{}, false
	}
	short, inv := -1, -1
	for _, ok := range shorts[queue] {
		if ok > set.Done {
			if i := captureInvoke(h, ok); i > set.Done {
				short, inv = ok, i
				break
			}
		}
	}
	if short < 0 {
		return Anomaly{}, false
	}
	got := 0
	for i := range q.Holds {
		if q.Holds[i].OK == short {
			got++
		}
	}
	left := " (the task table gives it no budget)"
	if budget >= 0 {
		left = fmt.Sprintf(" with %d captures of budget left", budget)
		if budget == 1 {
			left = " with 1 capture of budget left"
		}
	}
	return Anomaly{Kind: LostTask, Key: c.Task, Ops: []int{c.Invoke, c.OK, set.Invoke, set.Done, inv, short},
		Window: &Window{Start: h[inv].Time, End: h[len(h)-1].Time},
		Message: fmt.Sprintf("task %s, last captured by %s at %s%s, was set %s by %s at %s, and %s's capture of %s at %s returned %d of %d tasks; no capture took it to the end",
			c.Task, worker(h[c.OK]), secs(h[c.OK].Time), left, set.Status, worker(h[set.Invoke]), secs(h[set.Done].Time),
			worker(h[short]), queue, secs(h[short].Time), got, q.Limits[short])}, true
}

// couldFree reports whether reaper pass r could have freed hold ho's task
// (docs/history.md §4.7, lost-task): its invoke gives no timeout, it never
// completed, or it completed at least its timeout after ho's capture was
// invoked. By the history's times, the reaper's clock could then have read
// a time its timeout past the capture time the service stored.
func couldFree(h history.History, r Reap, ho *Hold) bool {
	return r.Timeout < 0 || r.Done < 0 || h[r.Done].Time >= h[ho.Invoke].Time+r.Timeout
}

// captureInvoke returns the invoke of the capture completed at ok.
func captureInvoke(h history.History, ok int) int {
	for i := ok - 1; i >= 0; i-- {
		if h[i].Process == h[ok].Process && h[i].Type == history.Invoke {
			return i
		}
	}
	return ok
}
