package checker

import (
	"math/rand/v2"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// randomResourceHistory returns a random well-formed history of about n
// ops for the resource check, of any shape the format allows and no lock
// service would record: two to four workers on one or two keys acquire,
// renew, release, read and write, with leases, session locks and untils,
// writes with and without `applied`, ops that fail, crashes that keep the
// client or not, ops at the same time, and ops still outstanding at the
// end. With cycles, each worker mostly goes acquire, read, write read+1,
// release, with no lock between the workers, on a register that sometimes
// serves an older value or loses a write; otherwise its ops come at random,
// with small values that repeat and reads of values nobody wrote.
func randomResourceHistory(r *rand.Rand, n int, cycles bool) history.History {
	g := &randomHistory{r: r, workers: 2 + r.IntN(3), keys: 1 + r.IntN(2), cycles: cycles, reg: map[string][]int64{}}
	for w := range g.workers {
		g.ws = append(g.ws, randomWorker{proc: w, open: -1})
	}
	for len(g.h) < n {
		g.now += time.Duration(r.IntN(3)) * time.Millisecond
		if r.IntN(25) == 0 {
			g.emit(history.Op{Process: history.NemesisProcess, Type: history.Info, F: "partition"})
			continue
		}
		w := r.IntN(g.workers)
		if g.ws[w].open < 0 {
			g.invoke(w)
		} else if r.IntN(3) > 0 {
			g.complete(w)
		}
	}
	return g.h
}

// randomHistory is randomResourceHistory's state.
type randomHistory struct {
	r             *rand.Rand
	h             history.History
	now           time.Duration
	workers, keys int
	cycles        bool
	ws            []randomWorker
	reg           map[string][]int64 // by key: the values the register held, the latest last
}

// randomWorker is one worker: its process, its outstanding invoke (-1:
// none), the step of its cycle and the value it read last.
type randomWorker struct {
	proc, open, step int
	key              string
	read             int64
}

func (g *randomHistory) emit(op history.Op) int {
	op.Index, op.Time = len(g.h), g.now
	g.h = append(g.h, op)
	return op.Index
}

func (g *randomHistory) value() []byte {
	if g.r.IntN(8) == 0 {
		return nil
	}
	return history.IntValue(int64(g.r.IntN(6)))
}

// next picks worker w's next f and key.
func (g *randomHistory) next(w *randomWorker) (string, string) {
	cycle := []string{history.FAcquire, history.FRead, history.FWrite, history.FRelease}
	if g.cycles && g.r.IntN(10) > 0 {
		if w.step == 0 {
			w.key = []string{"a", "b"}[g.r.IntN(g.keys)]
		}
		f := cycle[w.step]
		w.step = (w.step + 1) % len(cycle)
		return f, w.key
	}
	fs := append(cycle, history.FAcquire, history.FRenew, history.FRead, history.FWrite, history.FLeaseLost)
	return fs[g.r.IntN(len(fs))], []string{"a", "b"}[g.r.IntN(g.keys)]
}

func (g *randomHistory) invoke(w int) {
	rw := &g.ws[w]
	f, key := g.next(rw)
	op := history.Op{Process: rw.proc, Client: w, Type: history.Invoke, F: f, Key: key}
	switch op.F {
	case history.FAcquire, history.FRenew:
		if g.r.IntN(2) == 0 {
			op.TTL = time.Duration(1+g.r.IntN(12)) * time.Millisecond
		}
	case history.FWrite:
		op.Value = g.value()
		if g.cycles {
			op.Value = history.IntValue(rw.read + 1)
		}
	}
	rw.open = g.emit(op)
}

func (g *randomHistory) complete(w int) {
	rw := &g.ws[w]
	inv := g.h[rw.open]
	op := history.Op{Process: inv.Process, Client: w, F: inv.F, Key: inv.Key, Type: []history.Type{history.OK, history.OK, history.OK, history.Fail, history.Info}[g.r.IntN(5)]}
	switch {
	case op.Type == history.OK && (op.F == history.FAcquire || op.F == history.FRenew):
		if g.r.IntN(3) == 0 {
			op.Lease = time.Duration(1+g.r.IntN(12)) * time.Millisecond
		}
		op.Session = g.r.IntN(3) == 0
		if g.r.IntN(3) == 0 {
			op.Until = g.now + time.Duration(g.r.IntN(10))*time.Millisecond
		}
	case op.Type == history.OK && op.F == history.FRead:
		op.Value = g.readValue(inv.Key, rw)
	case op.F == history.FWrite:
		g.completeWrite(&op, inv)
	}
	if op.Type == history.Info {
		op.Kept = g.r.IntN(3) == 0
	}
	g.emit(op)
	rw.open = -1
	if op.Type == history.Info {
		rw.proc += g.workers // the worker goes on under a new process
		rw.step = 0
	}
}

// readValue is what a read of key returns: at random, or from the
// register, mostly its latest value, sometimes an older one.
func (g *randomHistory) readValue(key string, rw *randomWorker) []byte {
	if !g.cycles {
		return g.value()
	}
	vs := g.reg[key]
	var v int64
	switch {
	case len(vs) == 0:
	case g.r.IntN(6) == 0:
		v = vs[g.r.IntN(len(vs))]
	default:
		v = vs[len(vs)-1]
	}
	if g.r.IntN(40) == 0 {
		v = int64(g.r.IntN(100)) // nobody wrote it
	}
	rw.read = v
	return history.IntValue(v)
}

// completeWrite completes the write op invoked at inv: its value, when
// it was applied, and whether the register took it.
func (g *randomHistory) completeWrite(op *history.Op, inv history.Op) {
	if !g.cycles && g.r.IntN(3) == 0 {
		op.Value = g.value()
	}
	if op.Type != history.Info && g.r.IntN(2) == 0 {
		op.Applied = inv.Time + time.Duration(g.r.Int64N(int64(g.now-inv.Time)+1))
	}
	if v, ok := inv.Int(); ok && g.cycles && op.Type != history.Fail && g.r.IntN(8) > 0 {
		g.reg[inv.Key] = append(g.reg[inv.Key], v)
	}
}
