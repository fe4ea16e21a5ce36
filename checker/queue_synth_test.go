package checker

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// queueSynth shapes the long queue histories synthQueue writes.
type queueSynth struct {
	Workers, Tasks, Queues int
	Ops                    int // ops of the history, about
	Limit                  int // a capture's limit, at most
	Budget                 int // each task's budget; 0 for none
	// ReapEvery is how often the reaper passes (0: no reaper), ReapAfter
	// its timeout.
	ReapEvery, ReapAfter time.Duration
	// InfoRate and FailRate are the shares of ops of unknown outcome and
	// failed; the reaper's passes are of unknown outcome only when
	// ReaperInfo is set (one ends every hold for good).
	InfoRate, FailRate float64
	ReaperInfo         bool
	// Racy is the share of captures that also return a task another
	// process holds (a double-capture); Slow is the chance that a worker holding tasks waits, at each of its
	// turns, rather than set a status (a stale-status when the reaper takes
	// a task meanwhile and another worker captures it).
	Racy, Slow float64
	// Misfire is the chance that a capture takes a task regardless of its
	// queue and budget (a cross-queue, a budget-overspent).
	Misfire float64
}

// benchQueue is the queue history of BenchmarkQueueCheck1M: 16 workers,
// 1000 tasks in 4 queues without budgets, a reaper passing every second
// that frees tasks held for 5 s, 1% of ops of unknown outcome and 1%
// failed, no promise broken.
var benchQueue = queueSynth{Workers: 16, Tasks: 1000, Queues: 4, Ops: 1_000_000, Limit: 4,
	ReapEvery: time.Second, ReapAfter: 5 * time.Second, InfoRate: 0.01, FailRate: 0.01}

type synthTask struct {
	id, queue string
	status    string
	budget    int // -1: none
	holder    int // its capturer's process while in progress, -1
	at        time.Duration
}

type synthWorker struct {
	client, proc int
	queue        string
	reaper       bool
	out          *synthOut
	held         []int
	next         time.Duration // the reaper's next pass
}

type synthOut struct {
	f     string
	inv   int
	limit int
	task  int
}

type queueGen struct {
	r       *rand.Rand
	o       queueSynth
	h       history.History
	now     time.Duration
	tasks   []synthTask
	workers []*synthWorker
	procs   int
}

// synthQueue returns a long well-formed history of the queue workload:
// the header, the task table, then workers that capture tasks of their
// queue and set their status, and a reaper, with ops outstanding together,
// crashes after which a worker goes on under a new process, and the ops
// still outstanding at the end left pending.
func synthQueue(r *rand.Rand, o queueSynth) history.History {
	g := &queueGen{r: r, o: o}
	g.emit(history.Header())
	var specs []history.TaskSpec
	for i := range o.Tasks {
		t := synthTask{id: "t" + strconv.Itoa(i), queue: "q" + strconv.Itoa(i%o.Queues), status: history.StatusDone, budget: -1, holder: -1}
		sp := history.TaskSpec{Task: t.id, Queue: t.queue}
		if o.Budget > 0 {
			t.budget = o.Budget
			sp.Budget = &o.Budget
		}
		g.tasks = append(g.tasks, t)
		specs = append(specs, sp)
	}
	g.emit(history.TasksOp(specs))
	for c := range o.Workers {
		g.workers = append(g.workers, &synthWorker{client: c, proc: g.newProc(), queue: "q" + strconv.Itoa(c%o.Queues)})
	}
	if o.ReapEvery > 0 {
		g.workers = append(g.workers, &synthWorker{client: o.Workers, proc: g.newProc(), reaper: true})
	}
	for len(g.h) < o.Ops {
		g.now += time.Duration(1+g.r.IntN(1000)) * time.Microsecond
		w := g.workers[g.r.IntN(len(g.workers))]
		if w.out != nil {
			g.complete(w)
		} else {
			g.invoke(w)
		}
	}
	for _, w := range g.workers {
		if w.out != nil && g.r.IntN(2) == 0 {
			g.complete(w)
		}
	}
	return g.h
}

// newProc returns a new process number.
func (g *queueGen) newProc() int {
	g.procs++
	return g.procs - 1
}

// emit records op at the next index and the current time, and returns its
// index.
func (g *queueGen) emit(op history.Op) int {
	op.Index, op.Time = len(g.h), g.now
	g.h = append(g.h, op)
	return op.Index
}

// invoke starts w's next op, if it has one now.
func (g *queueGen) invoke(w *synthWorker) {
	op := history.Op{Process: w.proc, Client: w.client, Type: history.Invoke}
	o := &synthOut{task: -1}
	switch {
	case w.reaper:
		if g.now < w.next {
			return
		}
		w.next = g.now + g.o.ReapEvery
		op.F, op.Value = history.FReap, history.IntValue(int64(g.o.ReapAfter))
	case len(w.held) > 0 && g.r.Float64() >= g.o.Slow:
		o.task = w.held[0]
		status := history.StatusDone
		if g.r.IntN(4) == 0 {
			status = history.StatusFailed
		}
		op.F, op.Key, op.Value = history.FSetStatus, g.tasks[o.task].id, history.JSONValue(status)
	case len(w.held) > 0:
		return
	default:
		o.limit = 1 + g.r.IntN(g.o.Limit)
		op.F, op.Key, op.Value = history.FCapture, w.queue, history.IntValue(int64(o.limit))
	}
	o.f = op.F
	o.inv = g.emit(op)
	w.out = o
}

// complete ends w's outstanding op: failed, of unknown outcome (taking
// effect or not; the worker goes on under a new process) or ok.
func (g *queueGen) complete(w *synthWorker) {
	o := w.out
	w.out = nil
	inv := g.h[o.inv]
	op := history.Op{Process: w.proc, Client: w.client, F: inv.F, Key: inv.Key, Type: history.OK}
	x := g.r.Float64()
	switch {
	case x < g.o.FailRate:
		op.Type = history.Fail
		g.emit(op)
		return
	case x < g.o.FailRate+g.o.InfoRate && (!w.reaper || g.o.ReaperInfo):
		op.Type = history.Info
		if g.r.IntN(2) == 0 {
			g.apply(w, o, &op)
		}
		op.Value = nil
		g.emit(op)
		w.proc, w.held = g.newProc(), nil
		return
	}
	g.apply(w, o, &op)
	g.emit(op)
}

// apply makes the service take op o of w, and sets the ok's value.
func (g *queueGen) apply(w *synthWorker, o *synthOut, op *history.Op) {
	switch o.f {
	case history.FReap:
		reaped := []string{}
		for i := range g.tasks {
			if t := &g.tasks[i]; t.status == history.StatusInProgress && t.at+g.o.ReapAfter <= g.now {
				t.status, t.holder = history.StatusFailed, -1
				reaped = append(reaped, t.id)
			}
		}
		op.Value = history.JSONValue(reaped)
	case history.FSetStatus:
		t := &g.tasks[o.task]
		t.status, t.holder = history.StatusOf(g.h[o.inv]), -1
		w.held = slices.DeleteFunc(w.held, func(i int) bool { return i == o.task })
	case history.FCapture:
		op.Value = history.JSONValue(g.capture(w, o.limit))
	}
}

// capture takes up to limit capturable tasks of w's queue, starting at a
// random one, and with Racy's share one that another process holds.
func (g *queueGen) capture(w *synthWorker, limit int) []history.CapturedTask {
	out := []history.CapturedTask{}
	start := g.r.IntN(len(g.tasks))
	racy := g.r.Float64() < g.o.Racy
	for k := range g.tasks {
		if len(out) == limit {
			break
		}
		i := (start + k) % len(g.tasks)
		t := &g.tasks[i]
		taken := t.status == history.StatusInProgress
		misfire := g.o.Misfire > 0 && g.r.Float64() < g.o.Misfire
		if !misfire && (t.queue != w.queue || t.budget == 0) || (taken && (!racy || t.holder == w.proc)) {
			continue
		}
		racy = racy && !taken
		t.status, t.holder, t.at = history.StatusInProgress, w.proc, g.now
		e := history.CapturedTask{Task: t.id, Queue: t.queue}
		if t.budget >= 0 {
			t.budget = max(t.budget-1, 0)
			b := t.budget
			e.Budget = &b
		}
		out = append(out, e)
		w.held = append(w.held, i)
	}
	return out
}

// queueHeld feeds h to a queue stream and returns the heap it holds once
// it has read the last op, before its result: what is live after a
// collection, above what was before it.
func queueHeld(h history.History) float64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	s := newQueueStream()
	followEach(h, s.add, s.holdEvent)
	runtime.GC()
	runtime.ReadMemStats(&m)
	runtime.KeepAlive(s)
	return float64(m.HeapAlloc) - float64(base)
}
