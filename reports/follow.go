package reports

import (
	"cmp"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// follower follows a history fed to it op by op, in order (add): each
// worker process's outstanding invoke, and the beliefs of docs/history.md
// §3, by checker.Analyze's rule, which a test holds it to. A belief starts
// at its grant's ok and ends at its process's next release or lease-lost
// invoke, re-acquisition of the key, or crash, or at its until (moved by
// the renewals that return before it passes) when that comes first; one
// that nothing ends runs to its until, or on without end (checker.Forever).
//
// It calls started with each belief as it starts and ended with it once
// its end is known (at the end of the history, finish, for those still
// open). It keeps no op: a process's outstanding invoke is a copy without
// its value, and a crashed process is forgotten, so its memory is bounded
// by the live processes and the keys each holds, not by the history's
// length.
type follower struct {
	n       int
	procs   map[int]*followProc
	started func(b *drawnHold)
	ended   func(b *drawnHold)
}

// followProc is what the follower keeps of one worker process.
type followProc struct {
	client     int
	pending    history.Op // its outstanding invoke, without its value
	hasPending bool
	keys       []followKey
}

// followKey is a process's state of one key: its open belief, if any, and
// the until in force.
type followKey struct {
	key   string
	open  *drawnHold
	until time.Duration
}

func newFollower() *follower { return &follower{procs: map[int]*followProc{}} }

func (p *followProc) key(k string) *followKey {
	for i := range p.keys {
		if p.keys[i].key == k {
			return &p.keys[i]
		}
	}
	p.keys = append(p.keys, followKey{key: k})
	return &p.keys[len(p.keys)-1]
}

// add feeds the history's next op. It returns the outstanding invoke a
// completion completes (nil for an invoke, a nemesis op, or a completion
// without its invoke).
func (f *follower) add(op *history.Op) *history.Op {
	f.n++
	if op.IsNemesis() {
		return nil
	}
	p := f.procs[op.Process]
	if p == nil {
		p = &followProc{client: op.Client}
		f.procs[op.Process] = p
	}
	if op.Type == history.Invoke {
		p.pending, p.hasPending = *op, true
		p.pending.Value = nil
		switch op.F {
		case history.FRelease:
			f.close(p.key(op.Key), op.Time, op.Index)
		case history.FLeaseLost:
			f.close(p.key(op.Key), op.Time, op.Index)
		}
		return nil
	}
	if !p.hasPending {
		return nil // not well-formed; the checker says so
	}
	p.hasPending = false
	switch {
	case op.F == history.FAcquire && op.Type == history.OK:
		fk := p.key(op.Key)
		f.close(fk, op.Time, op.Index)
		b := &drawnHold{Process: op.Process, Client: op.Client, Key: op.Key, Token: op.Token, Start: op.Time, End: checker.Forever, I: op.Index, J: -1}
		fk.open, fk.until = b, op.Until
		if f.started != nil {
			f.started(b)
		}
	case op.F == history.FRenew && op.Type == history.OK:
		if fk := p.key(op.Key); fk.open != nil && op.Until != 0 && (fk.until == 0 || op.Time <= fk.until) {
			fk.until = op.Until
		}
	}
	if op.Type == history.Info {
		for k := range p.keys {
			f.close(&p.keys[k], op.Time, op.Index)
		}
		delete(f.procs, op.Process) // it issues nothing more
	}
	return &p.pending
}

// close ends the open belief of fk, if any, at the op of index i (time at),
// or at its until when that came first.
func (f *follower) close(fk *followKey, at time.Duration, i int) {
	b := fk.open
	if b == nil {
		return
	}
	b.End, b.J, b.Until = at, i, fk.until
	if fk.until != 0 && fk.until < at {
		b.End, b.J = max(fk.until, b.Start), -1
	}
	fk.open, fk.until = nil, 0
	if f.ended != nil {
		f.ended(b)
	}
}

// eachOpen calls fn with every belief still open.
func (f *follower) eachOpen(fn func(b *drawnHold)) {
	for _, p := range f.procs {
		for _, fk := range p.keys {
			if fk.open != nil {
				fn(fk.open)
			}
		}
	}
}

// finish ends the history: the beliefs still open run to their until, or
// on without end. It returns the latest until they run to (0: none).
func (f *follower) finish() time.Duration {
	var last time.Duration
	var open []*followKey
	for _, p := range f.procs {
		for k := range p.keys {
			if p.keys[k].open != nil {
				open = append(open, &p.keys[k])
			}
		}
	}
	// in the order they started, so that what ended reads the same on
	// every run
	sortByStart(open)
	for _, fk := range open {
		b := fk.open
		b.Until = fk.until
		if fk.until != 0 {
			b.End = max(fk.until, b.Start)
			last = max(last, b.End)
		}
		fk.open = nil
		if f.ended != nil {
			f.ended(b)
		}
	}
	return last
}

// sortByStart sorts the keys by the start of their open beliefs, then by
// their grants' ops.
func sortByStart(ks []*followKey) {
	slices.SortFunc(ks, func(a, b *followKey) int {
		return cmp.Or(cmp.Compare(a.open.Start, b.open.Start), cmp.Compare(a.open.I, b.open.I))
	})
}
