// queue_holds.go holds the queue stream's tasks, queues and holds: what a
// capture's completion makes of each task it returned, the budgets, the
// cross-queue rule, the overlaps of holds, and the short captures lost-task
// waits on.

package checker

import (
	"fmt"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// queueTask is what the queue check keeps of one task.
type queueTask struct {
	name        string
	holds       []*queueHold   // not yet ended for good, in the order of their oks
	outstanding []*queueStatus // its set-statuses not yet completed
	settled     []statusEntry  // completed set-statuses that did not fail (addSettled)
	latest      []queueLatest  // each live process's latest hold of it
	lastReap    int            // the completion of the latest reap ok naming it, -1
	count       int            // the holds of it
	overBudget  *holdRef       // the capture beyond its budget
	// lastHold is its last hold, and leastBudget the least budget its
	// captures gave (when hasLeastBudget), for lost-task.
	lastHold       *queueHold
	leastBudget    int
	hasLeastBudget bool
	lastStatus     int           // the latest invoke of a set-status of it that did not fail
	doneAfterLast  *statusEntry  // the first set-status ok to done or failed after lastHold
	shortAfter     *shortCapture // the first capture of its queue short of its limit invoked after doneAfterLast returned
	waitOn         string        // the queue of short captures it waits on
	crashed        bool          // lastHold's process crashed
	crashIndex     int           // the crash of lastHold's process, when crashed
	crashTime      time.Duration // and its time
	reads          taskReaps     // what the readings of the reaps read of it (queuereaps.go)
}

// queueQueue is what the queue check keeps of one queue.
type queueQueue struct {
	lastUnknown int             // the latest end of a capture of unknown outcome, Open when one is pending at the end
	crashed     crashedCaptures // the captures of unknown outcome that completed (info), in order
	firstShort  *shortCapture
	waiting     map[*queueTask]struct{}
}

// queueHold is one hold as the queue check reads it (Hold).
type queueHold struct {
	task               *queueTask
	queue              string
	proc, client       int
	invoke, okIndex    int
	invTime, okTime    time.Duration
	entryQueue         string
	entryBudget        *int
	statusEnd, reapEnd int // Open when none yet
	statusTime, reapAt time.Duration
	closing, resolved  bool
	firstOverlap       *queuePair // the earliest later hold that overlaps it
	laterOverlaps      [][2]int   // the invoke and ok of each other one
}

// queuePair is the later hold of an overlap, with what may have undone
// the earlier capture when the later one returned.
type queuePair struct {
	invoke, okIndex, client int
	okTime                  time.Duration
	lastSettled             statusEntry
	hasLastSettled          bool
	outstanding             []*queueStatus
}

// holdRef is a capture by value.
type holdRef struct {
	invoke, okIndex, client int
	okTime                  time.Duration
}

// ref returns h's capture by value.
func (h *queueHold) ref() holdRef {
	return holdRef{invoke: h.invoke, okIndex: h.okIndex, client: h.client, okTime: h.okTime}
}

// queueLatest is a live process's latest hold of a task, with the first
// reap ok naming the task invoked after it.
type queueLatest struct {
	proc   int
	hold   holdRef
	reap   queueReap
	reaped bool
}

// shortCapture is a capture ok that returned fewer tasks than its limit.
type shortCapture struct {
	invoke, okIndex, client int
	invTime, okTime         time.Duration
	got                     int
	limit                   int64
}

// latestOf returns process proc's latest hold of t, nil when it has none.
func (t *queueTask) latestOf(proc int) *queueLatest {
	for i := range t.latest {
		if t.latest[i].proc == proc {
			return &t.latest[i]
		}
	}
	return nil
}

// captureDone takes a capture's completion.
func (s *queueStream) captureDone(p *queueProc, q *queueOp) {
	s.captured = true
	switch q.typ {
	case history.Info:
		qq := s.queue(q.key)
		qq.lastUnknown = max(qq.lastUnknown, q.index)
		qq.crashed = append(qq.crashed, crashedCapture{invoke: p.invoke, info: q.index, invTime: p.at, crashAt: q.time, client: q.client})
		return
	case history.OK:
	default:
		return
	}
	var first map[string]int // the first entry of each task, for a long list
	if len(q.captured) > 16 {
		first = map[string]int{}
		for k := len(q.captured) - 1; k >= 0; k-- {
			first[q.captured[k].Task] = k
		}
	}
	for k := range q.captured {
		e := q.captured[firstEntry(q.captured, k, first)]
		h := &queueHold{task: s.task(e.Task), queue: q.key, proc: q.process, client: q.client, invoke: p.invoke, okIndex: q.index,
			invTime: p.at, okTime: q.time, entryQueue: e.Queue, entryBudget: e.Budget, statusEnd: Open, reapEnd: Open}
		s.hold(h, p)
	}
	if int64(len(q.captured)) < p.limit {
		s.short(q.key, shortCapture{invoke: p.invoke, okIndex: q.index, client: q.client, invTime: p.at, okTime: q.time, got: len(q.captured), limit: p.limit})
	}
}

// firstEntry returns the index of the first entry of ts naming the task of
// ts[k] (first maps each task to it when set).
func firstEntry(ts []history.CapturedTask, k int, first map[string]int) int {
	if first != nil {
		return first[ts[k].Task]
	}
	for j := range k {
		if ts[j].Task == ts[k].Task {
			return j
		}
	}
	return k
}

// hold takes a new hold h of process p.
func (s *queueStream) hold(h *queueHold, p *queueProc) {
	t := h.task
	s.holds++
	if s.firstUnknownReap != Open || t.lastReap > h.invoke {
		h.reapEnd, h.reapAt = h.okIndex, h.okTime
	}
	for _, a := range t.holds {
		if a.proc != h.proc && a.statusEnd == Open && a.reapEnd == Open {
			s.overlap(a, h)
		}
	}
	t.count++
	if sp, ok := s.specs[t.name]; ok && sp.Budget != nil && t.count == *sp.Budget+1 {
		r := h.ref()
		t.overBudget = &r
	}
	s.checkQueue(h)
	if e := t.latestOf(h.proc); e != nil {
		*e = queueLatest{proc: h.proc, hold: h.ref()}
	} else {
		t.latest = append(t.latest, queueLatest{proc: h.proc, hold: h.ref()})
		p.tasks = append(p.tasks, t)
	}
	s.lastHold(t, h)
	s.readHold(h)
	if h.reapEnd == Open {
		t.holds = append(t.holds, h)
	}
}

// lastHold makes h the last hold of its task t, for lost-task.
func (s *queueStream) lastHold(t *queueTask, h *queueHold) {
	t.lastHold = h
	if b := h.entryBudget; b != nil && (!t.hasLeastBudget || *b < t.leastBudget) {
		t.leastBudget, t.hasLeastBudget = *b, true
	}
	t.doneAfterLast, t.shortAfter, t.crashed = nil, nil, false
	if t.waitOn != "" {
		delete(s.queues[t.waitOn].waiting, t)
		t.waitOn = ""
	}
	delete(s.orphans, t)
}

// taskQueue returns the queue of task t as the task table records it,
// else as the capture entry says (entryQueue), and the index of the task
// table record when it said it (-1 otherwise); "" when neither says.
func (s *queueStream) taskQueue(t, entryQueue string) (string, int) {
	if sp, ok := s.specs[t]; ok {
		return sp.Queue, s.specOp
	}
	return entryQueue, -1
}

// checkQueue finds the cross-queue of hold h, if any.
func (s *queueStream) checkQueue(h *queueHold) {
	queue, spec := s.taskQueue(h.task.name, h.entryQueue)
	if queue == "" || queue == h.queue {
		return
	}
	ops := []int{h.invoke, h.okIndex}
	where := "its capture says"
	if spec >= 0 {
		ops = append([]int{spec}, ops...)
		where = "the task table says"
	}
	s.crossQueue = append(s.crossQueue, Anomaly{Kind: CrossQueue, Key: h.task.name, Ops: ops,
		Message: fmt.Sprintf("%s's capture of queue %s returned task %s at %s, which is of queue %s, as %s", workerOf(h.client), h.queue, h.task.name, secs(h.okTime), queue, where)})
}

// workerOf names the worker of client c, as worker does.
func workerOf(c int) string { return worker(history.Op{Client: c}) }

// overlap takes the later hold b captured while a was open.
func (s *queueStream) overlap(a, b *queueHold) {
	if a.firstOverlap != nil {
		a.laterOverlaps = append(a.laterOverlaps, [2]int{b.invoke, b.okIndex})
		return
	}
	pr := &queuePair{invoke: b.invoke, okIndex: b.okIndex, client: b.client, okTime: b.okTime}
	pr.lastSettled, pr.hasLastSettled = bestSettled(a.task.settled, a.proc, a.invoke)
	for _, st := range a.task.outstanding {
		if st.proc != a.proc && (!pr.hasLastSettled || st.invoke > pr.lastSettled.invoke) {
			pr.outstanding = append(pr.outstanding, st)
		}
	}
	a.firstOverlap = pr
}

// short takes capture c of queue, which returned fewer tasks than its
// limit.
func (s *queueStream) short(queue string, c shortCapture) {
	q := s.queue(queue)
	if q.firstShort == nil {
		q.firstShort = &c
	}
	for t := range q.waiting {
		if t.doneAfterLast.done < c.invoke {
			t.shortAfter = &c
			t.waitOn = ""
			delete(q.waiting, t)
		}
	}
}
