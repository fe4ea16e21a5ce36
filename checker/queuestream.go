package checker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// queueStream is the queue check (docs/history.md §4.7) of a well-formed
// history fed to it op by op, in order (add), whose result comes once the
// history has ended (result); it also finds the lost tasks (lostTasks) and
// counts the holds and captures that the liveness report reads.
//
// A hold (§3, "Tasks") ends at the invoke of an op that did not fail,
// which is known once that op completes: a hold is open until such an op
// is invoked, and its end is known for good once no op still outstanding
// and invoked before that end (its process's set-status of the task, a
// reap) can end it sooner. A capture can overlap only the holds of its
// task still open; a stale set-status needs a newer hold still open at its
// return; of the set-statuses that may have undone a capture, a process's
// later one of the task supersedes its earlier ones; and lost-task reads
// each task's last hold. So it holds:
//   - the task table record; for each task its last hold, how many
//     captures named it, the latest reap naming it, the least budget its
//     captures gave, the first set-status to done or failed after its last
//     hold, its set-statuses outstanding and a few completed ones (of each
//     process its latest, less those two later ones supersede: about four
//     a task); for each live worker process, its latest hold of each task
//     it captured, with the first reap naming the task after it;
//   - each live worker process's outstanding op, the reaps outstanding,
//     and for each queue its captures of unknown outcome (one for each
//     crash of a process in a capture, for lost-task's excuses) and its
//     first capture that returned fewer tasks than its limit;
//   - the holds not yet ended for good, each with the later holds of other
//     processes captured while it was open; the set-status oks whose newer
//     hold's end is not yet known; and the anomalies found;
//   - for the readings of the reaps (queuereaps.go), of each task its
//     holds, set-statuses and the reaps ok naming it since the last hold
//     at which what came before was settled for good (settledBefore), and
//     the reaps of unknown outcome.
//
// Its memory is bounded by the tasks and queues, the live processes times
// the tasks each captured, and what is open, not by the history's length,
// save the readings of a task whose hold a reaper ended in a gap that no
// reap ok completed before the captures after it can fill: it keeps them
// to the end.
// A history without queue ops costs a comparison of each op's f and leaves
// nothing held. The worst cases: a reap outstanding for long may end every
// hold captured or ended since its invoke, so it keeps them until it
// completes (one pending at the end, to the end); a hold that never ends
// (its process crashed and no reaper came) is compared with every later
// capture of its task by another process, one entry for each, each a
// double-capture reported as one of its followers; and the queue ops that
// come before the task table record are kept until it comes, since it says
// every task's queue and budget (a run records it right after the header;
// a queue history without one is held whole to its end).
type queueStream struct {
	n   int           // ops seen
	end time.Duration // the time of the last op

	tabled     bool      // the task table record has come
	early      []queueOp // the queue ops before it
	earlyProcs procTable[struct{}]
	specs      map[string]history.TaskSpec
	specOp     int

	procs        procTable[queueProc]
	tasks        map[string]*queueTask
	queues       map[string]*queueQueue
	reaps        []*queueReap // outstanding, in the order of their invokes
	unknownReap  int          // the first invoke of a reap of unknown outcome, Open when none
	unknownReaps []readReap   // the reaps of unknown outcome, for the readings (queuereaps.go)
	closing      []*queueHold // holds whose end is known but may still move earlier
	stale        []*staleWait
	orphans      map[*queueTask]struct{} // tasks whose last hold, open, is a crashed process's: no reap has set it back
	holds        int
	captured     bool // a capture completed, or was pending at the end
	done         bool // the end of the history was taken into account

	doubles    []*queueHold // holds that later holds overlap, each with its overlaps
	crossQueue []Anomaly
	staleFound []Anomaly
}

// queueOp is what the queue check reads of one op: a queue op, or the
// crash (f "") of a worker op of any other f.
type queueOp struct {
	index           int
	time            time.Duration
	process, client int
	typ             history.Type
	f, key          string
	limit           int64
	status          string
	captured        []history.CapturedTask
	reaped          []string
}

// queueProc is a live worker process: its outstanding op, and the tasks
// of which it has a latest hold.
type queueProc struct {
	pending bool
	f, key  string
	invoke  int
	at      time.Duration
	limit   int64
	status  *queueStatus
	reap    *queueReap
	tasks   []*queueTask
}

// queueTask is what the queue check keeps of one task.
type queueTask struct {
	name        string
	holds       []*queueHold   // not yet ended for good, in the order of their oks
	outstanding []*queueStatus // its set-statuses not yet completed
	settled     []statusEntry  // completed set-statuses that did not fail (addSettled)
	latest      []queueLatest  // each live process's latest hold of it
	lastReap    int            // the completion of the latest reap ok naming it, -1
	count       int            // the holds of it
	over        *holdRef       // the capture beyond its budget
	// lost-task
	last       *queueHold
	least      int
	hasLeast   bool
	lastStatus int          // the latest invoke of a set-status of it that did not fail
	set        *statusEntry // the first set-status ok to done or failed after last
	short      *shortCapture
	waitOn     string // the queue of short captures it waits on
	crashed    bool   // last's process crashed
	crash      int
	crashTime  time.Duration
	reads      taskReaps // what the readings of the reaps read of it (queuereaps.go)
}

// queueQueue is what the queue check keeps of one queue.
type queueQueue struct {
	lastUnknown int             // the latest end of a capture of unknown outcome, Open when one is pending at the end
	crashed     crashedCaptures // the captures of unknown outcome that completed (info), in order
	first       *shortCapture
	waiting     map[*queueTask]struct{}
}

// queueHold is one hold as the queue check reads it (Hold).
type queueHold struct {
	task               *queueTask
	queue              string
	proc, client       int
	invoke, ok         int
	invTime, okTime    time.Duration
	entryQueue         string
	entryBudget        *int
	statusEnd, reapEnd int // Open when none yet
	statusTime, reapAt time.Duration
	closing, resolved  bool
	first              *queuePair // the earliest later hold that overlaps it
	later              [][2]int   // the invoke and ok of each other one
}

// queuePair is the later hold of an overlap, with what may have undone
// the earlier capture when the later one returned.
type queuePair struct {
	invoke, ok, client int
	okTime             time.Duration
	best               statusEntry
	hasBest            bool
	outstanding        []*queueStatus
}

// queueStatus is one set-status.
type queueStatus struct {
	proc, client      int
	task              *queueTask
	status            string
	invoke, done      int
	invTime, doneTime time.Duration
	typ               history.Type
	stale             *staleWait // the hold and reap it may be stale after
}

// statusEntry is a completed set-status by value.
type statusEntry struct {
	proc, client      int
	status            string
	invoke, done      int
	invTime, doneTime time.Duration
	typ               history.Type
}

// entry returns st by value.
func (st *queueStatus) entry() statusEntry {
	return statusEntry{proc: st.proc, client: st.client, status: st.status, invoke: st.invoke, done: st.done, invTime: st.invTime, doneTime: st.doneTime, typ: st.typ}
}

// queueReap is one reap.
type queueReap struct {
	invoke, done      int
	invTime, doneTime time.Duration
}

// holdRef is a capture by value.
type holdRef struct {
	invoke, ok, client int
	okTime             time.Duration
}

// ref returns h's capture by value.
func (h *queueHold) ref() holdRef {
	return holdRef{invoke: h.invoke, ok: h.ok, client: h.client, okTime: h.okTime}
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
	invoke, ok, client int
	invTime, okTime    time.Duration
	got                int
	limit              int64
}

// staleWait is a set-status ok S whose process's hold a reap ended, with
// the holds of its task that may be the newer hold C, in order: S is
// stale when one of them had not ended by S's return.
type staleWait struct {
	s     statusEntry
	task  *queueTask
	h     holdRef
	reap  queueReap
	cands []*queueHold
}

// newQueueStream returns the queue check of a history, ready for its
// first op.
func newQueueStream() *queueStream {
	return &queueStream{specOp: -1, unknownReap: Open}
}

// add feeds the history's next op.
func (s *queueStream) add(op *history.Op) {
	s.n++
	s.end = op.Time
	if op.Process == history.NemesisProcess {
		if op.F == history.FTasks && !s.tabled {
			s.table(op)
		}
		return
	}
	switch op.F {
	case history.FCapture, history.FSetStatus, history.FReap:
	default:
		if op.Type == history.Info {
			s.crashOf(op)
		}
		return
	}
	q := queueOpOf(op)
	if !s.tabled {
		s.early = append(s.early, q)
		s.earlyProcs.set(op.Process, &struct{}{})
		return
	}
	s.feed(&q)
}

// crashOf takes the info completion of a worker op that is no queue op.
func (s *queueStream) crashOf(op *history.Op) {
	if !s.tabled {
		if s.earlyProcs.get(op.Process) != nil {
			s.early = append(s.early, queueOp{index: op.Index, time: op.Time, process: op.Process, client: op.Client, typ: op.Type})
		}
		return
	}
	if p := s.procs.get(op.Process); p != nil {
		s.crash(op.Process, p, op.Index, op.Time)
	}
}

// queueOpOf copies what the queue check reads of queue op op.
func queueOpOf(op *history.Op) queueOp {
	q := queueOp{index: op.Index, time: op.Time, process: op.Process, client: op.Client, typ: op.Type, f: op.F, key: op.Key}
	switch {
	case op.Type == history.Invoke && op.F == history.FCapture:
		q.limit, _ = op.Int()
	case op.Type == history.Invoke && op.F == history.FSetStatus:
		q.status = statusOf(op)
	case op.Type == history.OK && op.F == history.FCapture:
		q.captured, _ = history.CapturedOf(*op)
	case op.Type == history.OK && op.F == history.FReap:
		q.reaped, _ = history.ReapedOf(*op)
	}
	return q
}

// statusOf returns the status a set-status invoke sets, as
// history.StatusOf does, without a JSON decoder for a plain string (one of
// printable ASCII characters without escapes), the status as a run records
// it.
func statusOf(op *history.Op) string {
	v := op.Value
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return history.StatusOf(*op)
	}
	for _, c := range v[1 : len(v)-1] {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return history.StatusOf(*op)
		}
	}
	switch s := v[1 : len(v)-1]; string(s) {
	case history.StatusDone:
		return history.StatusDone
	case history.StatusFailed:
		return history.StatusFailed
	default:
		return string(s)
	}
}

// table takes the task table record, the first one, and then the queue
// ops that came before it.
func (s *queueStream) table(op *history.Op) {
	specs, _ := history.TasksOf(*op)
	s.tabled, s.specOp = true, op.Index
	s.specs = map[string]history.TaskSpec{}
	for _, sp := range specs {
		if _, dup := s.specs[sp.Task]; !dup {
			s.specs[sp.Task] = sp
		}
	}
	s.replay()
}

// replay feeds the queue ops kept while no task table record had come.
func (s *queueStream) replay() {
	s.tabled = true
	early := s.early
	s.early, s.earlyProcs = nil, procTable[struct{}]{}
	for i := range early {
		s.feed(&early[i])
	}
}

// task returns the state of the task named name, made when new.
func (s *queueStream) task(name string) *queueTask {
	t := s.tasks[name]
	if t == nil {
		if s.tasks == nil {
			s.tasks = map[string]*queueTask{}
		}
		t = &queueTask{name: name, lastReap: -1, lastStatus: -1}
		s.tasks[name] = t
	}
	return t
}

// queue returns the state of the queue named name, made when new.
func (s *queueStream) queue(name string) *queueQueue {
	q := s.queues[name]
	if q == nil {
		if s.queues == nil {
			s.queues = map[string]*queueQueue{}
		}
		q = &queueQueue{lastUnknown: -1}
		s.queues[name] = q
	}
	return q
}

// feed takes the next queue op, the task table being known.
func (s *queueStream) feed(q *queueOp) {
	if q.typ == history.Invoke {
		s.invoke(q)
		return
	}
	p := s.procs.get(q.process)
	if p == nil {
		return
	}
	if q.f != "" && p.pending {
		p.pending = false
		switch q.f {
		case history.FCapture:
			s.captureDone(p, q)
		case history.FSetStatus:
			s.statusDone(p.status, q)
		case history.FReap:
			s.reapDone(p.reap, q)
		}
		p.status, p.reap = nil, nil
	}
	if q.typ == history.Info {
		s.crash(q.process, p, q.index, q.time)
	}
}

// invoke takes a queue op's invoke.
func (s *queueStream) invoke(q *queueOp) {
	p := s.procs.get(q.process)
	if p == nil {
		p = &queueProc{}
		s.procs.set(q.process, p)
	}
	p.pending, p.f, p.key, p.invoke, p.at, p.limit = true, q.f, q.key, q.index, q.time, q.limit
	switch q.f {
	case history.FSetStatus:
		t := s.task(q.key)
		st := &queueStatus{proc: q.process, client: q.client, task: t, status: q.status, invoke: q.index, done: -1, invTime: q.time, typ: history.Invoke}
		t.outstanding = append(t.outstanding, st)
		readStatusInvoked(st)
		if e := t.latestOf(q.process); e != nil && e.reaped {
			st.stale = &staleWait{task: t, h: e.hold, reap: e.reap}
		}
		p.status = st
	case history.FReap:
		r := &queueReap{invoke: q.index, done: -1, invTime: q.time}
		s.reaps = append(s.reaps, r)
		p.reap = r
	}
}

// crash takes the crash of process n at index i: the tasks whose last
// hold is its, still open, become orphans, and it holds no latest hold any
// more.
func (s *queueStream) crash(n int, p *queueProc, i int, at time.Duration) {
	for _, t := range p.tasks {
		if t.last != nil && t.last.proc == n && t.last.statusEnd == Open && t.last.reapEnd == Open {
			t.crashed, t.crash, t.crashTime = true, i, at
			if s.orphans == nil {
				s.orphans = map[*queueTask]struct{}{}
			}
			s.orphans[t] = struct{}{}
		}
		t.latest = slices.DeleteFunc(t.latest, func(e queueLatest) bool { return e.proc == n })
	}
	s.procs.set(n, nil)
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
		h := &queueHold{task: s.task(e.Task), queue: q.key, proc: q.process, client: q.client, invoke: p.invoke, ok: q.index,
			invTime: p.at, okTime: q.time, entryQueue: e.Queue, entryBudget: e.Budget, statusEnd: Open, reapEnd: Open}
		s.hold(h, p)
	}
	if int64(len(q.captured)) < p.limit {
		s.short(q.key, shortCapture{invoke: p.invoke, ok: q.index, client: q.client, invTime: p.at, okTime: q.time, got: len(q.captured), limit: p.limit})
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
	if s.unknownReap != Open || t.lastReap > h.invoke {
		h.reapEnd, h.reapAt = h.ok, h.okTime
	}
	for _, a := range t.holds {
		if a.proc != h.proc && a.statusEnd == Open && a.reapEnd == Open {
			s.overlap(a, h)
		}
	}
	t.count++
	if sp, ok := s.specs[t.name]; ok && sp.Budget != nil && t.count == *sp.Budget+1 {
		r := h.ref()
		t.over = &r
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
	t.last = h
	if b := h.entryBudget; b != nil && (!t.hasLeast || *b < t.least) {
		t.least, t.hasLeast = *b, true
	}
	t.set, t.short, t.crashed = nil, nil, false
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
	ops := []int{h.invoke, h.ok}
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
	if a.first != nil {
		a.later = append(a.later, [2]int{b.invoke, b.ok})
		return
	}
	pr := &queuePair{invoke: b.invoke, ok: b.ok, client: b.client, okTime: b.okTime}
	pr.best, pr.hasBest = bestSettled(a.task.settled, a.proc, a.invoke)
	for _, st := range a.task.outstanding {
		if st.proc != a.proc && (!pr.hasBest || st.invoke > pr.best.invoke) {
			pr.outstanding = append(pr.outstanding, st)
		}
	}
	a.first = pr
}

// short takes capture c of queue, which returned fewer tasks than its
// limit.
func (s *queueStream) short(queue string, c shortCapture) {
	q := s.queue(queue)
	if q.first == nil {
		q.first = &c
	}
	for t := range q.waiting {
		if t.set.done < c.invoke {
			t.short = &c
			t.waitOn = ""
			delete(q.waiting, t)
		}
	}
}

// statusDone takes a set-status's completion.
func (s *queueStream) statusDone(st *queueStatus, q *queueOp) {
	st.done, st.doneTime, st.typ = q.index, q.time, q.typ
	t := st.task
	t.outstanding = slices.DeleteFunc(t.outstanding, func(x *queueStatus) bool { return x == st })
	readStatusDone(st)
	if st.typ != history.Fail {
		t.settled = addSettled(t.settled, st.entry())
		t.lastStatus = max(t.lastStatus, st.invoke)
		s.endHolds(t, st.proc, st.invoke, st.invTime)
	}
	if st.typ == history.OK {
		s.passedOverSet(t, st)
		if w := st.stale; w != nil {
			w.s = st.entry()
			for _, c := range t.holds {
				if c.proc != st.proc && c.invoke > w.reap.done && c.ok < st.invoke && c.statusEnd == Open && c.reapEnd == Open {
					w.cands = append(w.cands, c)
				}
			}
			s.stale = append(s.stale, w)
		}
	}
	st.stale = nil
	s.review(t)
	s.settle()
}

// endHolds ends the holds of task t by process proc captured before its
// set-status invoked at inv, which did not fail.
func (s *queueStream) endHolds(t *queueTask, proc, inv int, at time.Duration) {
	for _, h := range t.holds {
		if h.proc == proc && h.ok < inv && h.statusEnd == Open {
			h.statusEnd, h.statusTime = inv, at
		}
	}
}

// passedOverSet takes set-status ok st for lost-task: the first to done or
// failed after its task's last hold makes the task wait for a capture of
// its queue that returns fewer tasks than its limit.
func (s *queueStream) passedOverSet(t *queueTask, st *queueStatus) {
	if t.last == nil || t.set != nil || st.invoke <= t.last.ok || (st.status != history.StatusDone && st.status != history.StatusFailed) {
		return
	}
	e := st.entry()
	t.set = &e
	queue, _ := s.taskQueue(t.name, t.last.entryQueue)
	if queue == "" {
		queue = t.last.queue
	}
	q := s.queue(queue)
	if q.waiting == nil {
		q.waiting = map[*queueTask]struct{}{}
	}
	q.waiting[t] = struct{}{}
	t.waitOn = queue
}

// reapDone takes a reap's completion.
func (s *queueStream) reapDone(r *queueReap, q *queueOp) {
	s.reaps = slices.DeleteFunc(s.reaps, func(x *queueReap) bool { return x == r })
	r.done, r.doneTime = q.index, q.time
	switch q.typ {
	case history.OK:
		for _, name := range q.reaped {
			t := s.task(name)
			t.lastReap = q.index
			readReapOK(t, r)
			for _, h := range t.holds {
				reapHold(h, r)
			}
			for i := range t.latest {
				if e := &t.latest[i]; !e.reaped && e.hold.ok < r.invoke {
					e.reap, e.reaped = *r, true
				}
			}
			s.review(t)
		}
		for t := range s.orphans {
			if c := t.last; c.statusEnd != Open || c.reapEnd != Open {
				delete(s.orphans, t) // the reap ended its hold; one that did not name it freed nothing
			}
		}
	case history.Info:
		s.unknown(r)
	}
	s.settle()
}

// unknown takes reap r of unknown outcome: it may have set back any task
// at any time after its invoke, and so ends every hold by then.
func (s *queueStream) unknown(r *queueReap) {
	s.unknownReap = min(s.unknownReap, r.invoke)
	s.unknownReaps = append(s.unknownReaps, readReap{invoke: r.invoke, done: r.done, times: 1, invTime: r.invTime, unknown: true})
	for _, t := range s.tasks {
		for _, h := range t.holds {
			reapHold(h, r)
		}
		s.review(t)
	}
}

// reapHold ends hold h at reap r's invoke, or at h's ok when r was
// invoked before it, unless it ended sooner.
func reapHold(h *queueHold, r *queueReap) {
	end, at := r.invoke, r.invTime
	if h.ok > end {
		end, at = h.ok, h.okTime
	}
	if end < h.reapEnd {
		h.reapEnd, h.reapAt = end, at
	}
}

// review goes over the holds of task t whose end became known: those
// ended for good leave it, the others wait among the closing ones.
func (s *queueStream) review(t *queueTask) {
	t.holds = slices.DeleteFunc(t.holds, func(h *queueHold) bool {
		if h.closing || (h.statusEnd == Open && h.reapEnd == Open) {
			return false
		}
		if s.final(h) {
			s.resolve(h)
			return true
		}
		h.closing = true
		s.closing = append(s.closing, h)
		return false
	})
}

// settle resolves the closing holds ended for good, and the stale
// set-statuses whose newer hold is known.
func (s *queueStream) settle() {
	s.closing = slices.DeleteFunc(s.closing, func(h *queueHold) bool {
		if !s.final(h) {
			return false
		}
		s.resolve(h)
		t := h.task
		t.holds = slices.DeleteFunc(t.holds, func(x *queueHold) bool { return x == h })
		return true
	})
	s.stale = slices.DeleteFunc(s.stale, s.tryStale)
}

// end returns hold h's end as far as it is known, the time of the op
// there, and whether a reap ended it.
func (h *queueHold) end() (int, time.Duration, bool) {
	if h.reapEnd < h.statusEnd {
		return h.reapEnd, h.reapAt, true
	}
	return h.statusEnd, h.statusTime, false
}

// sooner returns the earliest end of hold h that an op still outstanding
// may give it: its process's set-status of its task, a reap; Open when
// none.
func (s *queueStream) sooner(h *queueHold) int {
	out := Open
	if p := s.procs.get(h.proc); p != nil && p.pending && p.f == history.FSetStatus && p.key == h.task.name && p.invoke > h.ok {
		out = p.invoke
	}
	for _, r := range s.reaps {
		out = min(out, max(h.ok, r.invoke))
	}
	return out
}

// final reports whether hold h has ended for good: no op still
// outstanding can end it sooner.
func (s *queueStream) final(h *queueHold) bool {
	e, _, _ := h.end()
	return e != Open && (s.done || s.sooner(h) >= e)
}

// endsAfter reports whether hold h is known to end after index x (decided),
// and whether it does.
func (s *queueStream) endsAfter(h *queueHold, x int) (decided, after bool) {
	if e, _, _ := h.end(); e <= x {
		return true, false
	}
	if s.done {
		return true, true
	}
	return s.sooner(h) > x, true
}

// resolve takes hold h, ended for good: the holds that overlap it are the
// later ones captured before its end.
func (s *queueStream) resolve(h *queueHold) {
	if h.resolved {
		return
	}
	h.resolved = true
	e, _, _ := h.end()
	if h.first == nil || h.first.ok >= e {
		h.first, h.later = nil, nil
		return
	}
	n := 0
	for n < len(h.later) && h.later[n][1] < e {
		n++
	}
	h.later = h.later[:n]
	s.doubles = append(s.doubles, h)
}

// tryStale decides stale set-status w when it can: its newer hold is the
// first of its candidates known to end after w's return. It reports
// whether w is decided.
func (s *queueStream) tryStale(w *staleWait) bool {
	for len(w.cands) > 0 {
		decided, after := s.endsAfter(w.cands[0], w.s.done)
		if !decided {
			return false
		}
		if after {
			s.staleFound = append(s.staleFound, staleAnomaly(w, w.cands[0]))
			w.cands = nil
			return true
		}
		w.cands = w.cands[1:]
	}
	return true
}

// staleAnomaly describes stale set-status w with the newer hold c.
func staleAnomaly(w *staleWait, c *queueHold) Anomaly {
	st, H, r := w.s, w.h, w.reap
	return Anomaly{Kind: StaleStatus, Key: w.task.name, Ops: []int{H.invoke, H.ok, r.invoke, r.done, c.invoke, c.ok, st.invoke, st.done},
		Message: fmt.Sprintf("%s set task %s to %s at %s, although a reaper pass had set it back at %s after %s's capture at %s, and %s had captured it again at %s and still held it",
			workerOf(st.client), w.task.name, st.status, secs(st.doneTime), secs(r.doneTime), workerOf(H.client), secs(H.okTime), workerOf(c.client), secs(c.okTime))}
}

// addSettled adds the completed set-status e, which did not fail, to the
// settled ones of its task and returns them: of each process its latest
// (a process's later set-status may undo every capture its earlier one
// may), less those that two later ones supersede (undoesLater): of those
// two processes one is not the capture's, so it is the later one that may
// have undone any capture the superseded one may have.
func addSettled(settled []statusEntry, e statusEntry) []statusEntry {
	settled = slices.DeleteFunc(settled, func(x statusEntry) bool { return x.proc == e.proc })
	settled = append(settled, e)
	var useless []int
	for i, x := range settled {
		n := 0
		for j, y := range settled {
			if j != i && undoesLater(y, x) {
				n++
			}
		}
		if n >= 2 {
			useless = append(useless, x.invoke)
		}
	}
	return slices.DeleteFunc(settled, func(x statusEntry) bool { return slices.Contains(useless, x.invoke) })
}

// undoesLater reports whether set-status y supersedes x: y was invoked
// after x and may undo every capture x may undo (docs/history.md §4.7,
// double-capture), so that x is never the last that may have undone a
// capture when y's process is not the capture's. One of unknown outcome
// may undo any capture; an ok one those invoked before it returned.
func undoesLater(y, x statusEntry) bool {
	return y.invoke > x.invoke && (y.typ != history.OK || (x.typ == history.OK && y.done >= x.done))
}

// bestSettled returns the settled set-status invoked last that may have
// undone a capture by process proc invoked at inv: by another process, of
// unknown outcome or returned after inv.
func bestSettled(settled []statusEntry, proc, inv int) (statusEntry, bool) {
	var out statusEntry
	found := false
	for _, x := range settled {
		if x.proc != proc && (x.typ != history.OK || x.done > inv) && (!found || x.invoke > out.invoke) {
			out, found = x, true
		}
	}
	return out, found
}

// close takes the end of the history into account, once: the ops still
// outstanding are of unknown outcome (a capture may have captured, a
// set-status ends its process's holds, a reap may have set back any task),
// and every hold has ended for good.
func (s *queueStream) close() {
	if s.done {
		return
	}
	if !s.tabled {
		s.replay()
	}
	s.procs.each(func(n int, p *queueProc) {
		if !p.pending {
			return
		}
		switch p.f {
		case history.FCapture:
			s.captured = true
			s.queue(p.key).lastUnknown = Open
		case history.FSetStatus:
			t := p.status.task
			t.lastStatus = max(t.lastStatus, p.invoke)
			s.endHolds(t, n, p.invoke, p.at)
		}
	})
	for _, r := range s.reaps {
		s.unknown(r)
	}
	s.done = true
	for _, t := range s.tasks {
		for _, h := range t.holds {
			s.resolve(h)
		}
		t.holds = nil
	}
	s.closing = nil
	s.stale = slices.DeleteFunc(s.stale, s.tryStale)
}

// holdCount returns the number of holds (captured tasks) of the history.
func (s *queueStream) holdCount() int { return s.holds }

// hasCaptures reports whether the history has a capture op (QueueFacts'
// Captured).
func (s *queueStream) hasCaptures() bool {
	s.close()
	return s.captured
}

// result ends the history and returns the queue check's result.
func (s *queueStream) result(ctx context.Context, name string) Result {
	start := time.Now()
	s.close()
	if ctx.Err() != nil {
		return Result{Name: name, Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: stopNote(ctx)}
	}
	var anomalies []Anomaly
	for _, a := range s.doubles {
		anomalies = s.doubleCaptures(anomalies, a)
	}
	for _, t := range s.tasks {
		if t.over != nil {
			b := *s.specs[t.name].Budget
			anomalies = append(anomalies, Anomaly{Kind: BudgetOverspent, Key: t.name, Ops: []int{s.specOp, t.over.invoke, t.over.ok},
				Message: fmt.Sprintf("task %s has a budget of %d captures in the task table, but it was captured %d times: capture %d of it by %s returned at %s",
					t.name, b, t.count, b+1, workerOf(t.over.client), secs(t.over.okTime))})
		}
	}
	anomalies = append(anomalies, s.crossQueue...)
	anomalies = append(anomalies, s.staleFound...)
	anomalies = append(anomalies, s.readingsAnomalies(anomalies)...)
	return finish(name, start, anomalies, "")
}

// doubleCaptures appends the double-captures of hold a, the first as the
// cause's anomaly and the others as its followers.
func (s *queueStream) doubleCaptures(anomalies []Anomaly, a *queueHold) []Anomaly {
	e, at, reaped := a.end()
	ops := func(invoke, ok int) []int {
		out := []int{a.invoke, a.ok, invoke, ok}
		if e != Open {
			out = append(out, e)
		}
		return out
	}
	b := a.first
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
	first := Anomaly{Kind: DoubleCapture, Key: a.task.name, Ops: ops(b.invoke, b.ok), Message: msg}
	for _, l := range a.later {
		first.Follows++
		first.Followers = append(first.Followers, ops(l[0], l[1]))
	}
	return append(anomalies, first)
}

// undoing returns the last set-status that may have undone the earlier
// capture of the overlap before pr's capture took the task (undoingStatus):
// of those outstanding when pr returned, the last that did not fail, else
// the last settled one that may have.
func (pr *queuePair) undoing() (statusEntry, bool) {
	for i := len(pr.outstanding) - 1; i >= 0; i-- {
		if st := pr.outstanding[i]; st.typ != history.Fail {
			return st.entry(), true
		}
	}
	return pr.best, pr.hasBest
}
