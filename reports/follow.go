package reports

import (
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// follower follows a history fed to it op by op, in order (add): each
// worker process's outstanding invoke, which the report draws, and the
// beliefs of docs/history.md §3 as checker.Follower finds them (the one
// implementation of who held which lock when).
//
// It calls started with each belief as it starts and ended with it once
// its end is known (at the end of the history, finish, for those still
// open, in the order of their grants). It keeps no op: a process's
// outstanding invoke is a copy without its value, and a crashed process
// is forgotten, so its memory is bounded by the live processes and the
// beliefs open, not by the history's length.
type follower struct {
	fol     *checker.Follower
	evs     []checker.HoldEvent
	procs   map[int]*followProc
	open    map[int]*drawnHold // by the grant's number
	started func(b *drawnHold)
	ended   func(b *drawnHold)
}

// followProc is what the follower keeps of one worker process.
type followProc struct {
	pending    history.Op // its outstanding invoke, without its value
	hasPending bool
}

func newFollower() *follower {
	return &follower{fol: checker.NewFollower(), procs: map[int]*followProc{}, open: map[int]*drawnHold{}}
}

// add feeds the history's next op. It returns the outstanding invoke a
// completion completes (nil for an invoke, a nemesis op, or a completion
// without its invoke).
func (f *follower) add(op *history.Op) *history.Op {
	f.evs = f.fol.Add(op, f.evs[:0])
	for i := range f.evs {
		f.hold(&f.evs[i], op)
	}
	if op.IsNemesis() {
		return nil
	}
	p := f.procs[op.Process]
	if p == nil {
		p = &followProc{}
		f.procs[op.Process] = p
	}
	if op.Type == history.Invoke {
		p.pending, p.hasPending = *op, true
		p.pending.Value = nil
		return nil
	}
	if !p.hasPending {
		return nil // not well-formed; the checker says so
	}
	p.hasPending = false
	if op.Type == history.Info {
		delete(f.procs, op.Process) // it issues nothing more
	}
	return &p.pending
}

// hold takes one event of the Follower, made at op (nil for the end of
// the history).
func (f *follower) hold(e *checker.HoldEvent, op *history.Op) {
	switch e.Kind {
	case checker.HoldGranted:
		b := &drawnHold{Process: e.Process, Client: e.Client, Key: e.Key, Token: e.Token, Start: e.Time, End: checker.Forever, I: op.Index, J: -1}
		f.open[e.Grant] = b
		if f.started != nil {
			f.started(b)
		}
	case checker.HoldEnded:
		b := f.open[e.Grant]
		if b == nil {
			return
		}
		delete(f.open, e.Grant)
		b.End, b.Until = e.Time, e.Until
		if e.EndOp() >= 0 {
			b.J = op.Index // the op that ends a belief is the one fed
		}
		if f.ended != nil {
			f.ended(b)
		}
	}
}

// clone returns a copy of f that shares nothing with it and calls
// nothing: a checkpoint of a reading (windowIndex).
func (f *follower) clone() *follower {
	c := &follower{fol: f.fol.Clone(), procs: make(map[int]*followProc, len(f.procs)), open: make(map[int]*drawnHold, len(f.open))}
	for pid, p := range f.procs {
		q := *p
		c.procs[pid] = &q
	}
	for g, b := range f.open {
		o := *b
		c.open[g] = &o
	}
	return c
}

// eachOpen calls fn with every belief still open.
func (f *follower) eachOpen(fn func(b *drawnHold)) {
	for _, b := range f.open {
		fn(b)
	}
}

// finish ends the history: the beliefs still open run to their until, or
// on without end. It returns the latest until they run to (0: none).
func (f *follower) finish() time.Duration {
	var last time.Duration
	f.evs = f.fol.End(f.evs[:0])
	for i := range f.evs {
		e := &f.evs[i]
		if e.Kind == checker.HoldEnded && e.Until != 0 {
			last = max(last, e.Time)
		}
		f.hold(e, nil)
	}
	return last
}
