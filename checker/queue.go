package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
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
// double-capture (two holds of one task by different processes overlap,
// or, as a reaper pass sets a task back at most once for each time it
// names it, no reading of the passes leaves the task's holds apart without
// a stale status: queuereaps.go), budget-overspent (a task captured more times than its budget),
// cross-queue (a capture returned a task of another queue) and
// stale-status (a set-status, by a process whose hold the reaper had ended,
// that took effect while a newer capture of the task held it). A history
// without queue ops is valid. It reads the history op by op
// (docs/history.md §6, queueStream): a capture can overlap only the holds
// of its task still open, so it holds those, the tasks' latest state and
// the ops outstanding, not the history.
type QueueChecker struct{}

var _ Checker = QueueChecker{}

// Name returns "queue".
func (QueueChecker) Name() string { return anomaly.CheckerQueue }

// Check judges the queue ops of h.
func (c QueueChecker) Check(ctx context.Context, h history.History) Result {
	return runValidated(ctx, c.Name(), h, c.checkValid)
}

func (c QueueChecker) checkValid(ctx context.Context, h history.History) Result {
	qs := newQueueStream()
	followEach(h, qs.add, qs.holdEvent)
	return qs.result(ctx, c.Name())
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

// lostTasks finds the lost-task anomalies of docs/history.md §4.7 over a
// history that ends at end: a task whose last hold stayed open to the end
// (so no reaper pass may have set it back), whose process crashed, with no
// set-status of the task after the hold; a task of the task table, with
// budget left, that no capture returned, although a capture ok of its queue
// returned fewer tasks than its limit and no capture of that queue of
// unknown outcome excuses it (QueueFacts.excuses); and a task passed over
// (passedOver).
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
		if s, ok := lastStatus[t]; ok && s > ho.OK {
			continue
		}
		out = append(out, Anomaly{Kind: LostTask, Key: t, Ops: []int{ho.Invoke, ho.OK, crash},
			Window: &Window{Start: h[crash].Time, End: end},
			Message: fmt.Sprintf("task %s stayed in progress from %s's capture at %s to the end: its process crashed at %s without setting its status, and %s",
				t, worker(h[ho.OK]), secs(h[ho.OK].Time), secs(h[crash].Time), nothingFreed)})
	}
	if q.SpecOp >= 0 {
		for t, s := range q.Specs {
			unknown := q.UnknownCaptures[s.Queue]
			if captured[t] || (s.Budget != nil && *s.Budget == 0) || len(shorts[s.Queue]) == 0 || slices.ContainsFunc(unknown, func(u UnknownCapture) bool { return q.excuses(u, t) }) {
				continue
			}
			// the first capture ok of its queue that returned fewer tasks than its limit
			ok := shorts[s.Queue][0]
			inv := captureInvoke(h, ok)
			cs := crashedCapturesOf(h, unknown)
			out = append(out, Anomaly{Kind: LostTask, Key: t, Ops: cs.ops([]int{q.SpecOp, inv, ok}),
				Window: &Window{Start: cs.start(h[inv].Time), End: end},
				Message: fmt.Sprintf("task %s of queue %s was never captured, although it was capturable throughout (done from the start, with budget left) and %s's capture of %s at %s asked for %d tasks and got %d%s",
					t, s.Queue, worker(h[ok]), s.Queue, secs(h[ok].Time), q.Limits[ok], got[ok], cs.taken())})
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
	var unknown []UnknownCapture // those that could have taken effect after c did
	for _, u := range q.UnknownCaptures[queue] {
		if u.End > c.Invoke {
			if q.excuses(u, c.Task) {
				return Anomaly{}, false
			}
			unknown = append(unknown, u)
		}
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
	cs := crashedCapturesOf(h, unknown)
	return Anomaly{Kind: LostTask, Key: c.Task, Ops: cs.ops([]int{c.Invoke, c.OK, set.Invoke, set.Done, inv, short}),
		Window: &Window{Start: cs.start(h[inv].Time), End: h[len(h)-1].Time},
		Message: fmt.Sprintf("task %s, last captured by %s at %s%s, was set %s by %s at %s, and %s's capture of %s at %s returned %d of %d tasks; no capture took it to the end%s",
			c.Task, worker(h[c.OK]), secs(h[c.OK].Time), left, set.Status, worker(h[set.Invoke]), secs(h[set.Done].Time),
			worker(h[short]), queue, secs(h[short].Time), got, q.Limits[short], cs.taken())}, true
}

// nothingFreed ends the sentence of a lost-task whose crashed holder left
// its task in progress: what did not free it.
const nothingFreed = "no set-status or reaper pass freed it after"

// crashedCapture is a capture of unknown outcome whose process crashed
// and that excuses no task (docs/history.md §4.7, lost-task): its invoke
// and info, by index and time, and its worker.
type crashedCapture struct {
	invoke, info     int
	invTime, crashAt time.Duration
	client           int
}

// crashedCaptures are the captures of unknown outcome that a lost task's
// anomaly names: it is lost whether they took it or not.
type crashedCaptures []crashedCapture

// crashedCapturesOf returns the captures us of h, none of them pending.
func crashedCapturesOf(h history.History, us []UnknownCapture) crashedCaptures {
	var out crashedCaptures
	for _, u := range us {
		out = append(out, crashedCapture{invoke: u.Invoke, info: u.End, invTime: h[u.Invoke].Time, crashAt: h[u.End].Time, client: h[u.Invoke].Client})
	}
	return out
}

// ops returns ops with the invoke and info of each capture appended.
func (cs crashedCaptures) ops(ops []int) []int {
	for _, c := range cs {
		ops = append(ops, c.invoke, c.info)
	}
	return ops
}

// start returns the start of the anomaly's window: from, or the last of
// the captures' infos when it comes later (the task is lost from then on
// in the reading where that capture took it).
func (cs crashedCaptures) start(from time.Duration) time.Duration {
	for _, c := range cs {
		from = max(from, c.crashAt)
	}
	return from
}

// taken returns the words that end the anomaly's sentence with the
// reading in which one of the captures took the task; "" when none.
func (cs crashedCaptures) taken() string {
	if len(cs) == 0 {
		return ""
	}
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s's, invoked at %s, whose process crashed at %s", workerOf(c.client), secs(c.invTime), secs(c.crashAt)))
	}
	return ", or a capture of unknown outcome took it: " + strings.Join(parts, "; ") + ", with nothing after that could have freed the task"
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
