// queue_stream.go holds the streaming queue check (docs/history.md §4.7):
// its state, the op-by-op feed (the ops before the task table record kept
// until it comes), each process's outstanding op and its crash (from the
// Follower's events), the end of the history and the result.

package checker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// queueStream is the queue check (docs/history.md §4.7) of a well-formed
// history fed to it op by op, in order (add), with the Follower's events
// over it (holdEvent: before or after the op that made them), whose result
// comes once the history has ended (result); it also finds the lost tasks
// (lostTasks) and counts the holds and captures that the liveness report
// reads. A process's crash it reads from the Follower's events.
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
	ops int           // ops seen
	end time.Duration // the time of the last op

	tabled     bool      // the task table record has come
	early      []queueOp // the queue ops before it
	earlyProcs procTable[struct{}]
	specs      map[string]history.TaskSpec
	specOp     int

	procs            procTable[queueProc]
	tasks            map[string]*queueTask
	queues           map[string]*queueQueue
	reaps            []*queueReap // outstanding, in the order of their invokes
	firstUnknownReap int          // the first invoke of a reap of unknown outcome, Open when none
	unknownReaps     []readReap   // the reaps of unknown outcome, for the readings (queuereaps.go)
	closing          []*queueHold // holds whose end is known but may still move earlier
	staleWaiting     []*staleWait
	orphans          map[*queueTask]struct{} // tasks whose last hold, open, is a crashed process's: no reap has set it back
	holds            int
	captured         bool // a capture completed, or was pending at the end
	ended            bool // the end of the history was taken into account
	// crashNext is the crash the Follower said happened at an op not yet
	// fed (index -1: none), taken once that op is.
	crashNext queueOp

	doubles    []*queueHold // holds that later holds overlap, each with its overlaps
	crossQueue []Anomaly
	staleFound []Anomaly
}

// queueOp is what the queue check reads of one op: a queue op, or a
// process's crash (f "", type info), from the Follower's events.
type queueOp struct {
	index           int
	time            time.Duration
	process, client int
	typ             history.Type
	fn, key         string
	limit           int64
	status          string
	captured        []history.CapturedTask
	reaped          []string
}

// queueProc is a live worker process: its outstanding op, and the tasks
// of which it has a latest hold.
type queueProc struct {
	pending bool
	fn, key string
	invoke  int
	at      time.Duration
	limit   int64
	status  *queueStatus
	reap    *queueReap
	tasks   []*queueTask
}

// newQueueStream returns the queue check of a history, ready for its
// first op.
func newQueueStream() *queueStream {
	return &queueStream{specOp: -1, firstUnknownReap: Open, crashNext: queueOp{index: -1}}
}

// add feeds the history's next op, and then the crash the Follower said
// it made, if its event came first.
func (s *queueStream) add(op *history.Op) {
	i := s.ops
	s.addOp(op)
	if s.crashNext.index == i {
		c := s.crashNext
		s.crashNext.index = -1
		s.crashed(&c)
	}
}

// holdEvent feeds one of the Follower's events, before or after the op that
// made it: a crash (HoldCrashed) is taken after its op.
func (s *queueStream) holdEvent(e *HoldEvent) {
	if e.Kind != HoldCrashed {
		return
	}
	c := queueOp{index: e.Index, time: e.Time, process: e.Process, client: e.Client, typ: history.Info}
	if e.Index < s.ops {
		s.crashed(&c)
		return
	}
	s.crashNext = c
}

// addOp takes the history's next op.
func (s *queueStream) addOp(op *history.Op) {
	s.ops++
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

// crashed takes the crash c of a process, after the op that made it: kept
// with the queue ops before the task table record when its process made
// one of them.
func (s *queueStream) crashed(c *queueOp) {
	if !s.tabled {
		if s.earlyProcs.get(c.process) != nil {
			s.early = append(s.early, *c)
		}
		return
	}
	if p := s.procs.get(c.process); p != nil {
		s.crash(c.process, p, c.index, c.time)
	}
}

// queueOpOf copies what the queue check reads of queue op op.
func queueOpOf(op *history.Op) queueOp {
	q := queueOp{index: op.Index, time: op.Time, process: op.Process, client: op.Client, typ: op.Type, fn: op.F, key: op.Key}
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
	if q.fn == "" {
		s.crash(q.process, p, q.index, q.time)
		return
	}
	if p.pending {
		p.pending = false
		switch q.fn {
		case history.FCapture:
			s.captureDone(p, q)
		case history.FSetStatus:
			s.statusDone(p.status, q)
		case history.FReap:
			s.reapDone(p.reap, q)
		}
		p.status, p.reap = nil, nil
	}
}

// invoke takes a queue op's invoke.
func (s *queueStream) invoke(q *queueOp) {
	p := s.procs.get(q.process)
	if p == nil {
		p = &queueProc{}
		s.procs.set(q.process, p)
	}
	p.pending, p.fn, p.key, p.invoke, p.at, p.limit = true, q.fn, q.key, q.index, q.time, q.limit
	switch q.fn {
	case history.FSetStatus:
		t := s.task(q.key)
		st := &queueStatus{proc: q.process, client: q.client, task: t, status: q.status, invoke: q.index, done: -1, invTime: q.time, typ: history.Invoke}
		t.outstanding = append(t.outstanding, st)
		readStatusInvoked(st)
		if e := t.latestOf(q.process); e != nil && e.reaped {
			st.stale = &staleWait{task: t, reapedHold: e.hold, reap: e.reap}
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
		if t.lastHold != nil && t.lastHold.proc == n && t.lastHold.statusEnd == Open && t.lastHold.reapEnd == Open {
			t.crashed, t.crashIndex, t.crashTime = true, i, at
			if s.orphans == nil {
				s.orphans = map[*queueTask]struct{}{}
			}
			s.orphans[t] = struct{}{}
		}
		t.latest = slices.DeleteFunc(t.latest, func(e queueLatest) bool { return e.proc == n })
	}
	s.procs.set(n, nil)
}

// close takes the end of the history into account, once: the ops still
// outstanding are of unknown outcome (a capture may have captured, a
// set-status ends its process's holds, a reap may have set back any task),
// and every hold has ended for good.
func (s *queueStream) close() {
	if s.ended {
		return
	}
	if !s.tabled {
		s.replay()
	}
	s.procs.each(func(n int, p *queueProc) {
		if !p.pending {
			return
		}
		switch p.fn {
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
	s.ended = true
	for _, t := range s.tasks {
		for _, h := range t.holds {
			s.resolve(h)
		}
		t.holds = nil
	}
	s.closing = nil
	s.staleWaiting = slices.DeleteFunc(s.staleWaiting, s.tryStale)
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
		if t.overBudget != nil {
			b := *s.specs[t.name].Budget
			anomalies = append(anomalies, Anomaly{Kind: BudgetOverspent, Key: t.name, Ops: []int{s.specOp, t.overBudget.invoke, t.overBudget.okIndex},
				Message: fmt.Sprintf("task %s has a budget of %d captures in the task table, but it was captured %d times: capture %d of it by %s returned at %s",
					t.name, b, t.count, b+1, workerOf(t.overBudget.client), secs(t.overBudget.okTime))})
		}
	}
	anomalies = append(anomalies, s.crossQueue...)
	anomalies = append(anomalies, s.staleFound...)
	anomalies = append(anomalies, s.readingsAnomalies(anomalies)...)
	return finish(name, start, anomalies, "")
}
