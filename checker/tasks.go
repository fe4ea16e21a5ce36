package checker

import (
	"slices"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// This file is the one implementation of the queue workload's shared
// definitions (docs/history.md §3, "Tasks"): the task table, captures and
// holds of tasks, set-status ops and reaper passes. Its order is the
// history's (indexes): a hold is the half-open stretch of history indexes
// [capture ok, end).

// Open is the End of a hold that nothing ended by the end of the history.
const Open = int(^uint(0) >> 1)

// Hold is one task named by one capture ok.
type Hold struct {
	Task    string
	Queue   string // the capture's queue (its key)
	Process int
	Client  int
	// Invoke and OK are the op indexes of the capture's invoke and ok.
	Invoke, OK int
	// End is the index at which the hold ended (Open when none), the
	// earliest of: the invoke of its process's first set-status of the
	// task after OK that may have taken effect (ok, or of unknown outcome);
	// and, for each reaper pass that may have set the task back after the
	// capture took effect (an ok naming it that completed after the
	// capture's invoke, or one of unknown outcome), its invoke, or OK when
	// it was invoked before OK.
	End int
	// Reaped is set when the reaper pass ended it.
	Reaped bool
}

// StatusSet is one set-status: its process, task, status and op indexes
// (Done is -1 when it never completed).
type StatusSet struct {
	Process, Client int
	Task, Status    string
	Invoke, Done    int
	Type            history.Type // its completion's type; Invoke when pending
}

// Reap is one reaper pass that may have set tasks back: an ok (Tasks lists
// them) or of unknown outcome (Unknown: any task).
type Reap struct {
	Invoke, Done int // Done is -1 when it never completed
	Tasks        []string
	Unknown      bool
}

// UnknownCapture is a capture of unknown outcome: the index of its invoke,
// and its End, the index of its info, or Open when pending at the end.
type UnknownCapture struct{ Invoke, End int }

// QueueFacts are the queue definitions evaluated over one well-formed
// history; nil fields and empty slices when the history has no queue ops.
type QueueFacts struct {
	// Specs are the tasks of the task table record; SpecOp is its index
	// (-1 when the history has none: no budgets, no queues of record).
	Specs  map[string]history.TaskSpec
	SpecOp int
	// Holds are in the order of their capture oks (and the order of the
	// tasks within one).
	Holds    []Hold
	Statuses []StatusSet // in the order of their invokes
	Reaps    []Reap      // ok and of unknown outcome, in the order of their invokes
	// Limits maps a capture ok's index to the limit its invoke asked for.
	Limits map[int]int64
	// UnknownCaptures maps a queue to its captures of unknown outcome, in
	// the order of their ends.
	UnknownCaptures map[string][]UnknownCapture
	// Crash maps a process to the index of its info completion.
	Crash map[int]int
	// failedCaptures counts the capture fails.
	failedCaptures int
}

// TaskQueue returns the queue of task t as the task table records it, else
// as the capture entry e says, and the index of the task table record when
// it said it (-1 otherwise); "" when neither says.
func (q *QueueFacts) TaskQueue(t string, e history.CapturedTask) (string, int) {
	if s, ok := q.Specs[t]; ok {
		return s.Queue, q.SpecOp
	}
	return e.Queue, -1
}

// analyzeQueue evaluates the queue definitions over h.
func analyzeQueue(h history.History) *QueueFacts {
	b := &queueFactsBuilder{
		q:           &QueueFacts{SpecOp: -1, Limits: map[int]int64{}, UnknownCaptures: map[string][]UnknownCapture{}, Crash: map[int]int{}},
		h:           h,
		pending:     map[int]int{},
		reapsByTask: map[string][][2]int{},
		unknownReap: Open,
		ends:        map[procTask][]int{},
	}
	for i := range h {
		b.add(i)
	}
	b.outstanding()
	b.sortAll()
	b.holdEnds()
	return b.q
}

// procTask is a worker process and a task it set the status of.
type procTask struct {
	proc int
	task string
}

// queueFactsBuilder is analyzeQueue's state while it reads the history.
type queueFactsBuilder struct {
	q       *QueueFacts
	h       history.History
	pending map[int]int // process -> its outstanding invoke
	// reapsByTask maps a task to the invoke and ok of each reap ok naming
	// it; unknownReap is the first invoke of a reap of unknown outcome.
	reapsByTask map[string][][2]int
	unknownReap int
	// ends are, by process and task, the invokes of the set-statuses that
	// may have taken effect.
	ends map[procTask][]int
}

// add reads op i of the history.
func (b *queueFactsBuilder) add(i int) {
	q, op := b.q, &b.h[i]
	if op.IsTasks() && q.SpecOp < 0 {
		b.table(i)
	}
	if op.IsNemesis() {
		return
	}
	if op.Type == history.Invoke {
		b.pending[op.Process] = i
		if op.F == history.FSetStatus {
			q.Statuses = append(q.Statuses, StatusSet{Process: op.Process, Client: op.Client, Task: op.Key, Status: history.StatusOf(*op), Invoke: i, Done: -1, Type: history.Invoke})
		}
		return
	}
	inv, ok := b.pending[op.Process]
	if !ok {
		return
	}
	delete(b.pending, op.Process)
	if op.Type == history.Info {
		q.Crash[op.Process] = i
	}
	switch op.F {
	case history.FCapture:
		b.captureDone(inv, i)
	case history.FSetStatus:
		b.statusDone(inv, i)
	case history.FReap:
		b.reapDone(inv, i)
	}
}

// table takes the task table record, op i, the first one.
func (b *queueFactsBuilder) table(i int) {
	q := b.q
	specs, _ := history.TasksOf(b.h[i])
	q.SpecOp = i
	q.Specs = map[string]history.TaskSpec{}
	for _, s := range specs {
		if _, dup := q.Specs[s.Task]; !dup {
			q.Specs[s.Task] = s
		}
	}
}

// captureDone takes op i, the completion of the capture invoked at inv.
func (b *queueFactsBuilder) captureDone(inv, i int) {
	q, op := b.q, &b.h[i]
	switch op.Type {
	case history.OK:
		n, _ := b.h[inv].Int()
		q.Limits[i] = n
		ts, _ := history.CapturedOf(*op)
		for _, t := range ts {
			q.Holds = append(q.Holds, Hold{Task: t.Task, Queue: op.Key, Process: op.Process, Client: op.Client, Invoke: inv, OK: i, End: Open})
		}
	case history.Info:
		q.UnknownCaptures[op.Key] = append(q.UnknownCaptures[op.Key], UnknownCapture{Invoke: inv, End: i})
	case history.Fail:
		q.failedCaptures++
	}
}

// statusDone takes op i, the completion of the set-status invoked at inv.
func (b *queueFactsBuilder) statusDone(inv, i int) {
	q, op := b.q, &b.h[i]
	for j := len(q.Statuses) - 1; j >= 0; j-- {
		if q.Statuses[j].Invoke == inv {
			q.Statuses[j].Done, q.Statuses[j].Type = i, op.Type
			break
		}
	}
	if op.Type != history.Fail {
		b.ends[procTask{op.Process, op.Key}] = append(b.ends[procTask{op.Process, op.Key}], inv)
	}
}

// reapDone takes op i, the completion of the reap invoked at inv.
func (b *queueFactsBuilder) reapDone(inv, i int) {
	q, op := b.q, &b.h[i]
	switch op.Type {
	case history.OK:
		ts, _ := history.ReapedOf(*op)
		q.Reaps = append(q.Reaps, Reap{Invoke: inv, Done: i, Tasks: ts})
		for _, t := range ts {
			b.reapsByTask[t] = append(b.reapsByTask[t], [2]int{inv, i})
		}
	case history.Info:
		q.Reaps = append(q.Reaps, Reap{Invoke: inv, Done: i, Unknown: true})
		b.unknownReap = min(b.unknownReap, inv)
	}
}

// outstanding takes the ops still outstanding at the end: they are of
// unknown outcome.
func (b *queueFactsBuilder) outstanding() {
	q := b.q
	for proc, inv := range b.pending {
		op := &b.h[inv]
		switch op.F {
		case history.FCapture:
			q.UnknownCaptures[op.Key] = append(q.UnknownCaptures[op.Key], UnknownCapture{Invoke: inv, End: Open})
		case history.FSetStatus:
			b.ends[procTask{proc, op.Key}] = append(b.ends[procTask{proc, op.Key}], inv)
		case history.FReap:
			q.Reaps = append(q.Reaps, Reap{Invoke: inv, Done: -1, Unknown: true})
			b.unknownReap = min(b.unknownReap, inv)
		}
	}
}

// sortAll puts the reaps in the order of their invokes, each queue's
// captures of unknown outcome in the order of their ends and the
// set-status invokes of each process and task in order.
func (b *queueFactsBuilder) sortAll() {
	slices.SortFunc(b.q.Reaps, func(x, y Reap) int { return x.Invoke - y.Invoke })
	for _, v := range b.q.UnknownCaptures {
		slices.SortFunc(v, func(x, y UnknownCapture) int { return x.End - y.End })
	}
	for _, v := range b.ends {
		slices.Sort(v)
	}
}

// holdEnds sets the end of every hold: its process's first set-status of
// its task after its ok that may have taken effect, or the first reap that
// may have set it back, when that comes sooner (Reaped).
func (b *queueFactsBuilder) holdEnds() {
	// first returns the first index in sorted xs after i, Open when none.
	first := func(xs []int, i int) int {
		j, _ := slices.BinarySearch(xs, i+1)
		if j < len(xs) {
			return xs[j]
		}
		return Open
	}
	for k := range b.q.Holds {
		ho := &b.q.Holds[k]
		ho.End = first(b.ends[procTask{ho.Process, ho.Task}], ho.OK)
		r := Open
		if b.unknownReap != Open {
			r = max(ho.OK, b.unknownReap)
		}
		for _, x := range b.reapsByTask[ho.Task] {
			if x[1] > ho.Invoke {
				r = min(r, max(ho.OK, x[0]))
			}
		}
		if r < ho.End {
			ho.End, ho.Reaped = r, true
		}
	}
}

// Captured reports whether the history has a capture op: a queue history,
// whose tasks liveness judges (docs/history.md §4.7).
func (q *QueueFacts) Captured() bool {
	return len(q.Limits) > 0 || len(q.UnknownCaptures) > 0 || q.failedCaptures > 0
}

// excuses reports whether capture u of unknown outcome excuses task t of
// lost-task (docs/history.md §4.7): its taking t would not have left t
// lost, as it is pending at the end, or after its invoke a set-status of t
// that did not fail was invoked, or a reap that did not fail may have set
// t back (an ok naming t that completed after that invoke, or a reap of
// unknown outcome).
func (q *QueueFacts) excuses(u UnknownCapture, t string) bool {
	if u.End == Open {
		return true
	}
	for _, s := range q.Statuses {
		if s.Task == t && s.Type != history.Fail && s.Invoke > u.Invoke {
			return true
		}
	}
	for _, r := range q.Reaps {
		if r.Unknown || (r.Done > u.Invoke && slices.Contains(r.Tasks, t)) {
			return true
		}
	}
	return false
}
