package reference

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// QueueGenOptions shape the histories GenerateQueue writes. The zero value
// lets GenerateQueue draw every choice from its random source.
type QueueGenOptions struct {
	// Ops is the number of client ops (invocations) to issue, at most; 0
	// draws it from [6, 16] ([12, 22] for a service that picks its
	// captures' tasks regardless of their budgets).
	Ops int
	// Honest, when set, makes the simulated queue keep every promise of
	// docs/history.md §4.7: a capture takes only capturable tasks of its
	// queue with budget left, atomically; only stale-status (a reaped
	// worker's late status) and lost-task can still come out.
	Honest bool
	// Ties allows ops at the same time.
	Ties bool
}

// GenerateQueue returns a random small well-formed history of the queue
// workload (docs/history.md §1, "The queue workload"): two or three
// workers and sometimes a reaper, two to four tasks in one or two queues
// with or without budgets, captures, set-statuses and reaper passes that
// are ok, fail, info or pending, crashes after which the worker goes on
// under a new process number, and, in most histories, the header op and
// the task table record. It simulates a queue service that may keep its
// promises or break them (a capture that reads at its invoke and writes at
// its completion, as the SQL seed's sub-select does, so that two captures
// return one task; a capture that ignores the budget or the queue; a
// capture that picks its limit of tasks regardless of their budgets and
// then returns only those with budget left, as the SQL seed's outer
// update does, so that spent tasks first in the table hide capturable
// ones for ever). Its captures return each task's budget left and queue
// in some histories. Every choice comes from r.
func GenerateQueue(r *rand.Rand, opts QueueGenOptions) history.History {
	g := &qgen{r: r, opts: opts}
	return g.run()
}

type qtask struct {
	id, queue string
	budget    int // -1: none
	status    string
	holder    int // process, -1: none
}

type qout struct {
	inv    int
	f, key string
	limit  int
	snap   []int // a racy capture's candidates, read at its invoke
	status string
}

type qworker struct {
	client, proc int
	queue        string
	out          *qout
	held         []string
}

type qgen struct {
	r        *rand.Rand
	opts     QueueGenOptions
	h        history.History
	now      int64
	tasks    []*qtask
	workers  []*qworker // the last one is the reaper when reaper is set
	reaper   bool
	nextProc int
	racy     bool    // captures read at their invoke and write at their completion
	blind    bool    // captures pick their tasks regardless of budgets, then drop the spent ones
	budgets  bool    // capture entries give the budget left
	queues   bool    // capture entries give the queue
	misfire  float64 // probability of ignoring the budget or the queue
	infoRate float64
	failRate float64
	token    uint64
}

func (g *qgen) chance(p float64) bool { return g.r.Float64() < p }

func (g *qgen) tick() {
	if g.opts.Ties && g.chance(0.15) {
		return
	}
	g.now += (1 + g.r.Int64N(40)) * ms
}

func (g *qgen) emit(op history.Op) int {
	op.Index = len(g.h)
	op.Time = time.Duration(g.now)
	g.h = append(g.h, op)
	return op.Index
}

func (g *qgen) run() history.History {
	queues := []string{"q0"}
	if g.chance(0.4) {
		queues = append(queues, "q1")
	}
	budgets := g.chance(0.7)
	for i := range 2 + g.r.IntN(3) {
		t := &qtask{id: "t" + strconv.Itoa(i), queue: queues[g.r.IntN(len(queues))], budget: -1, status: history.StatusDone, holder: -1}
		if budgets {
			t.budget = g.r.IntN(4)
		}
		g.tasks = append(g.tasks, t)
	}
	if !g.opts.Honest {
		g.racy = g.chance(0.5)
		if g.chance(0.3) {
			g.misfire = 0.15
		}
		g.blind = budgets && g.chance(0.6)
	}
	g.budgets = budgets && g.chance(0.75)
	g.queues = g.chance(0.3)
	g.infoRate = []float64{0, 0.1, 0.25}[g.r.IntN(3)]
	g.failRate = []float64{0, 0.1}[g.r.IntN(2)]
	if g.chance(0.85) {
		g.emit(history.Header())
		if g.chance(0.85) {
			var specs []history.TaskSpec
			for _, t := range g.tasks {
				s := history.TaskSpec{Task: t.id, Queue: t.queue}
				if t.budget >= 0 {
					b := t.budget
					s.Budget = &b
				}
				specs = append(specs, s)
			}
			g.emit(history.TasksOp(specs))
		}
	}
	nw := 2 + g.r.IntN(2)
	for c := range nw {
		g.workers = append(g.workers, &qworker{client: c, proc: g.nextProc, queue: queues[g.r.IntN(len(queues))]})
		g.nextProc++
	}
	if g.chance(0.5) {
		g.reaper = true
		g.workers = append(g.workers, &qworker{client: nw, proc: g.nextProc})
		g.nextProc++
	}
	ops := g.opts.Ops
	if ops == 0 {
		ops = 6 + g.r.IntN(11)
		if g.blind {
			// a blind service passes tasks over only once some budget is spent
			ops += 6
		}
	}
	for issued := 0; issued < ops || g.anyOut(); {
		w := g.workers[g.r.IntN(len(g.workers))]
		g.tick()
		if w.out == nil {
			if issued >= ops {
				continue
			}
			g.invoke(w)
			issued++
			continue
		}
		if issued >= ops && g.chance(0.15) {
			// left pending at the end
			w.out = nil
			continue
		}
		g.complete(w)
	}
	return g.h
}

func (g *qgen) anyOut() bool {
	return slices.ContainsFunc(g.workers, func(w *qworker) bool { return w.out != nil })
}

func (g *qgen) isReaper(w *qworker) bool { return g.reaper && w == g.workers[len(g.workers)-1] }

func (g *qgen) invoke(w *qworker) {
	op := history.Op{Process: w.proc, Client: w.client, Type: history.Invoke}
	o := &qout{}
	switch {
	case g.isReaper(w):
		op.F, op.Value = history.FReap, history.IntValue(int64(100*ms))
	case len(w.held) > 0 && g.chance(0.7):
		t := w.held[g.r.IntN(len(w.held))]
		o.status = history.StatusDone
		if g.chance(0.3) {
			o.status = history.StatusFailed
		}
		op.F, op.Key, op.Value = history.FSetStatus, t, history.JSONValue(o.status)
	default:
		o.limit = 1 + g.r.IntN(3)
		op.F, op.Key, op.Value = history.FCapture, w.queue, history.IntValue(int64(o.limit))
		if g.racy {
			o.snap = g.capturable(w.queue, true)
		}
	}
	o.f, o.key = op.F, op.Key
	o.inv = g.emit(op)
	w.out = o
}

// capturable lists the tasks a capture of queue q may take now: a task of
// q (or of another queue, when the service misfires) that is not in
// progress and has budget left (or not, when it misfires; a blind
// service leaves the budget to complete).
func (g *qgen) capturable(q string, misfire bool) []int {
	var out []int
	for i, t := range g.tasks {
		if t.status == history.StatusInProgress {
			continue
		}
		if t.queue != q && !(misfire && g.chance(g.misfire)) {
			continue
		}
		if t.budget == 0 && !g.blind && !(misfire && g.chance(g.misfire)) {
			continue
		}
		out = append(out, i)
	}
	return out
}

// complete completes w's outstanding op: ok, fail or info (a crash, after
// which the worker goes on under a new process), taking effect when it is
// ok and, half the time, when it is info.
func (g *qgen) complete(w *qworker) {
	o := w.out
	w.out = nil
	typ := history.OK
	switch x := g.r.Float64(); {
	case x < g.infoRate:
		typ = history.Info
	case x < g.infoRate+g.failRate:
		typ = history.Fail
	}
	took := typ == history.OK || typ == history.Info && g.chance(0.5)
	op := history.Op{Process: w.proc, Client: w.client, Type: typ, F: o.f, Key: o.key}
	switch o.f {
	case history.FCapture:
		var got []history.CapturedTask
		if took {
			got = g.capture(w, o)
		}
		if typ == history.OK {
			if got == nil {
				got = []history.CapturedTask{}
			}
			op.Value = history.JSONValue(got)
		}
	case history.FSetStatus:
		if took {
			for _, t := range g.tasks {
				if t.id == o.key {
					t.status, t.holder = o.status, -1
				}
			}
		}
		if typ != history.Fail {
			w.held = slices.DeleteFunc(w.held, func(t string) bool { return t == o.key })
		}
	case history.FReap:
		reaped := []string{}
		if took {
			for _, t := range g.tasks {
				if t.status == history.StatusInProgress && g.chance(0.5) {
					t.status, t.holder = history.StatusFailed, -1
					reaped = append(reaped, t.id)
				}
			}
		}
		if typ == history.OK {
			op.Value = history.JSONValue(reaped)
		}
	}
	if typ != history.OK && typ != history.Fail {
		op.Error = "timeout"
	} else if typ == history.Fail {
		op.Error = "refused"
	}
	g.emit(op)
	if typ == history.Info {
		// the process crashed; its worker goes on under a new one, holding nothing
		w.proc = g.nextProc
		g.nextProc++
		w.held = nil
	}
}

// capture takes, for w's capture o, up to its limit of the tasks the service
// sees as capturable (at the capture's invoke when it is racy), and returns
// them as the capture reports them.
func (g *qgen) capture(w *qworker, o *qout) []history.CapturedTask {
	var got []history.CapturedTask
	cands := o.snap
	if !g.racy {
		cands = g.capturable(o.key, true)
	}
	if g.blind && len(cands) > o.limit {
		cands = cands[:o.limit]
	}
	for _, i := range cands {
		if len(got) == o.limit {
			break
		}
		t := g.tasks[i]
		if g.blind && t.budget == 0 {
			continue
		}
		if t.budget > 0 {
			t.budget--
		}
		t.status, t.holder = history.StatusInProgress, w.proc
		g.token++
		e := history.CapturedTask{Task: t.id, Token: g.token}
		if g.budgets && t.budget >= 0 {
			b := t.budget
			e.Budget = &b
		}
		if g.queues {
			e.Queue = t.queue
		}
		got = append(got, e)
		w.held = append(w.held, t.id)
	}
	return got
}
