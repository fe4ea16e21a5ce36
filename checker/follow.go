package checker

import (
	"cmp"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// This file is the one implementation of who held which lock when
// (docs/history.md §3): grants and their leases, renewals, beliefs and
// their untils, the lock ops that may end a hold early (lease order),
// crashes and client closes. Follower evaluates them in one pass over a
// well-formed history fed op by op, and says what it finds as HoldEvents;
// the checks, Analyze and the report read those events and keep only what
// is theirs.

// HoldKind says what a HoldEvent tells.
type HoldKind uint8

// The kinds of HoldEvent, with the fields each sets besides Kind, Index,
// Process and Client.
const (
	// HoldGranted is a grant (an acquire ok, the op fed), whose belief
	// starts at its return: Grant, Key, Invoke, Call and Time (its return),
	// Token, Lease, Session, and Until (the ok's until: the belief's
	// first until in force).
	HoldGranted HoldKind = iota + 1
	// HoldRenewed is a renew ok (the op fed) of the process's latest grant
	// of the key: Grant, Key, Invoke, Call and Time (its return), Token, Lease
	// (its §3 lease) and Until (the ok's own until).
	HoldRenewed
	// HoldUntil is a move of an open belief's until in force: Grant, Key,
	// Until (the new until in force).
	HoldUntil
	// HoldEnded is the end of a belief: Grant, Key, Time (its end), Reason
	// (EndOp: the op fed ended it, unless its until or the end of the
	// history did) and Until (the until in force when it ended, 0: none).
	HoldEnded
	// HoldLater is a lock op of the grant's process on its key, after the
	// grant, that may have taken effect and may end the grant's hold
	// earlier than the ops before it (Grant.Later): Grant, Key, Invoke,
	// Call, Release, Lease and Session as LaterOp has them.
	HoldLater
	// HoldSettled says that no lock op joins a grant's Later any more: an
	// op called after its hold may have ended came, or its process
	// crashed. Grant, Key. A HoldLater that is a release settles its grant
	// too, without a HoldSettled (fewer events in flight).
	HoldSettled
	// HoldCrashed is a process's crash (its first info): it issues nothing
	// more. Time is the crash's.
	HoldCrashed
	// HoldClosed is the close of a process's client (docs/history.md §1):
	// at its crash, or, for a crash that kept the client, at the next
	// crash of its worker that did not. Time is the close's; Index is
	// the crash that closed it.
	HoldClosed
)

// HoldEvent is one thing the Follower found about who held which lock
// when. Which fields are set depends on Kind. Op indexes (Index, Invoke)
// are positions in the history as fed, which are the ops' Index in a
// well-formed history. It is kept small (104 bytes): a check of a file
// holds the events of every chunk in flight.
type HoldEvent struct {
	// Index is the index of the op whose feeding made the event: for the
	// events Follower.End makes, the history's length.
	Index   int
	Grant   int // the grant's number: grants are numbered 0, 1, ... in the order of their oks
	Key     string
	Process int
	Client  int
	Invoke  int
	Call    time.Duration
	Time    time.Duration
	Lease   time.Duration
	Until   time.Duration
	Token   uint64
	Kind    HoldKind
	Reason  EndReason
	Session bool
	Release bool
}

// OK is the index of the ok of a HoldGranted or HoldRenewed: the op fed.
func (e *HoldEvent) OK() int { return e.Index }

// EndOp is the op that ended the belief of a HoldEnded, -1 when its until
// or the end of the history did; the op that ended it is the op fed.
func (e *HoldEvent) EndOp() int {
	if e.Reason == EndUntil || e.Reason == EndOpen {
		return -1
	}
	return e.Index
}

// Follower follows who held which lock when over a well-formed history fed
// op by op, in order (Add), and then ended (End): the shared definitions of
// docs/history.md §3, in one place. It keeps only what is open: each live
// process's outstanding invoke (its index, time, f, key and ttl) and, for
// each key it was granted, its latest grant, open belief and until in
// force, and the grants whose hold a later op could still end earlier; so
// its memory is bounded by the live processes and the keys they hold, not
// by the history's length.
type Follower struct {
	n      int
	grants int
	procs  procTable[followProc]
	// kept are, by worker (client), the crashed processes whose client
	// lives on.
	kept map[int][]int
}

// followProc is what the Follower keeps of one live process.
type followProc struct {
	client  int
	pending pendingLock
	keys    []followKey
}

// pendingLock is what the Follower keeps of a process's outstanding
// invoke.
type pendingLock struct {
	index int // -1: none
	f     string
	key   string
	call  time.Duration
	ttl   time.Duration
}

// followKey is a process's state of one key it was granted.
type followKey struct {
	key    string
	latest int           // its latest grant's number
	lease  time.Duration // its latest grant's lease
	open   bool          // the latest grant's belief is open
	start  time.Duration // the open belief's start
	until  time.Duration // the open belief's until in force
	// later are the grants whose Later is still being collected: those
	// since the last release that a later op could still end earlier,
	// each with bound, the earliest its hold may end with no drift (an op
	// called at or after it ends nothing earlier, under any drift).
	later []collecting
}

// collecting is a grant whose Later ops the Follower still collects, with
// the earliest moment its hold may end with no drift, as far as seen.
type collecting struct {
	grant int
	bound time.Duration
}

// NewFollower returns a Follower at the start of a history.
func NewFollower() *Follower { return &Follower{kept: map[int][]int{}} }

// Invoke returns the index of process p's outstanding invoke, -1 when it
// has none: before Add of a completion, the invoke it completes.
func (f *Follower) Invoke(p int) int {
	if fp := f.procs.get(p); fp != nil {
		return fp.pending.index
	}
	return -1
}

// Latest returns the number of process p's latest grant of key k, -1 when
// it has none (or has crashed).
func (f *Follower) Latest(p int, k string) int {
	if fp := f.procs.get(p); fp != nil {
		if fk := fp.of(k); fk != nil {
			return fk.latest
		}
	}
	return -1
}

func (p *followProc) of(k string) *followKey {
	for i := range p.keys {
		if p.keys[i].key == k {
			return &p.keys[i]
		}
	}
	return nil
}

// Add feeds the history's next op and appends to out the events it makes,
// in the order they happen.
func (f *Follower) Add(op *history.Op, out []HoldEvent) []HoldEvent {
	i := f.n
	f.n++
	if op.IsNemesis() {
		return out
	}
	p := f.procs.get(op.Process)
	if p == nil {
		p = &followProc{client: op.Client, pending: pendingLock{index: -1}}
		f.procs.set(op.Process, p)
	}
	if op.Type == history.Invoke {
		p.pending = pendingLock{index: i, f: op.F, key: op.Key, call: op.Time, ttl: op.TTL}
		switch op.F {
		case history.FRelease:
			out = f.end(out, p, op.Process, p.of(op.Key), op.Time, i, EndRelease)
		case history.FLeaseLost:
			out = f.end(out, p, op.Process, p.of(op.Key), op.Time, i, EndLeaseLost)
		}
		return out
	}
	inv := p.pending
	if inv.index < 0 {
		// not well-formed (Validate says so), or a window of a history
		// that starts after the invoke: a crash still closes the client
		if op.Type == history.Info {
			out = f.closeClient(out, p, op, i)
		}
		return out
	}
	p.pending.index = -1
	if op.Type != history.Fail {
		out = f.later(out, p, op.Process, i, &inv, op)
	}
	switch {
	case op.F == history.FAcquire && op.Type == history.OK:
		out = f.grant(out, p, op, i, &inv)
	case op.F == history.FRenew && op.Type == history.OK:
		out = f.renew(out, p, op, i, &inv)
	}
	if op.Type == history.Info {
		out = f.crash(out, p, op, i)
	}
	return out
}

// event is the start of an event of process proc of p, made at op i.
func (f *Follower) event(kind HoldKind, p *followProc, proc, i int) HoldEvent {
	return HoldEvent{Kind: kind, Index: i, Process: proc, Client: p.client, Grant: -1, Invoke: -1}
}

// end ends fk's open belief, if any, at the op at index i (time at), or
// at its until when that came first.
func (f *Follower) end(out []HoldEvent, p *followProc, proc int, fk *followKey, at time.Duration, i int, why EndReason) []HoldEvent {
	if fk == nil || !fk.open {
		return out
	}
	fk.open = false
	e := f.event(HoldEnded, p, proc, i)
	e.Grant, e.Key, e.Time, e.Reason, e.Until = fk.latest, fk.key, at, why, fk.until
	if fk.until != 0 && fk.until < at {
		e.Time, e.Reason = max(fk.until, fk.start), EndUntil
	}
	return append(out, e)
}

// grant takes the acquire ok op, at index i and invoked at inv, of process
// p.
func (f *Follower) grant(out []HoldEvent, p *followProc, op *history.Op, i int, inv *pendingLock) []HoldEvent {
	fk := p.of(op.Key)
	if fk == nil {
		p.keys = append(p.keys, followKey{key: op.Key})
		fk = &p.keys[len(p.keys)-1]
	}
	out = f.end(out, p, op.Process, fk, op.Time, i, EndReacquire)
	lease, session := leaseOf(inv.ttl, op)
	g := f.grants
	f.grants++
	e := f.event(HoldGranted, p, op.Process, i)
	e.Grant, e.Key, e.Invoke, e.Call, e.Time = g, op.Key, inv.index, inv.call, op.Time
	e.Token, e.Lease, e.Session, e.Until = op.Token, lease, session, op.Until
	fk.latest, fk.lease, fk.open, fk.start, fk.until = g, lease, true, op.Time, op.Until
	fk.later = append(fk.later, collecting{grant: g, bound: leaseEnd(inv.call, lease, 0)})
	return append(out, e)
}

// renew takes the renew ok op, at index i and invoked at inv, of process p: it belongs to
// p's latest grant of the key, and moves the open belief's until when it
// returns no later than the until in force.
func (f *Follower) renew(out []HoldEvent, p *followProc, op *history.Op, i int, inv *pendingLock) []HoldEvent {
	fk := p.of(op.Key)
	if fk == nil {
		return out
	}
	e := f.event(HoldRenewed, p, op.Process, i)
	e.Grant, e.Key, e.Invoke, e.Call, e.Time = fk.latest, op.Key, inv.index, inv.call, op.Time
	e.Lease, e.Until, e.Token = renewalLease(inv.ttl, op, fk.lease), op.Until, op.Token
	out = append(out, e)
	if fk.open && op.Until != 0 && (fk.until == 0 || op.Time <= fk.until) {
		fk.until = op.Until
		u := f.event(HoldUntil, p, op.Process, i)
		u.Grant, u.Key, u.Until = fk.latest, op.Key, op.Until
		out = append(out, u)
	}
	return out
}

// crash takes process p's crash, the info op at index i: its beliefs end,
// it issues nothing more, and its client is closed (closeClient).
func (f *Follower) crash(out []HoldEvent, p *followProc, op *history.Op, i int) []HoldEvent {
	for k := range p.keys {
		out = f.end(out, p, op.Process, &p.keys[k], op.Time, i, EndCrash)
	}
	for _, fk := range p.keys {
		for _, c := range fk.later {
			out = f.settled(out, p, op.Process, i, fk.key, c.grant)
		}
	}
	c := f.event(HoldCrashed, p, op.Process, i)
	c.Time = op.Time
	out = append(out, c)
	f.procs.set(op.Process, nil)
	return f.closeClient(out, p, op, i)
}

// closeClient takes the client close of process p's crash, the info op at
// index i: unless it kept its client, the client is closed, with those of
// its worker's earlier crashes that kept theirs.
func (f *Follower) closeClient(out []HoldEvent, p *followProc, op *history.Op, i int) []HoldEvent {
	if op.Kept {
		f.kept[op.Client] = append(f.kept[op.Client], op.Process)
		return out
	}
	for _, q := range append(f.kept[op.Client], op.Process) {
		e := f.event(HoldClosed, p, q, i)
		e.Time = op.Time
		out = append(out, e)
	}
	delete(f.kept, op.Client)
	return out
}

// later takes the lock op of process p invoked at inv and completed by
// done (the zero op: never), which may have taken effect: it joins the
// Later of each grant of its process and key since the process's last
// release of the key that it could still end earlier. i is the op fed.
func (f *Follower) later(out []HoldEvent, p *followProc, proc, i int, inv *pendingLock, done *history.Op) []HoldEvent {
	switch inv.f {
	case history.FRelease, history.FRenew, history.FAcquire:
	default:
		return out
	}
	fk := p.of(inv.key)
	if fk == nil || len(fk.later) == 0 {
		return out
	}
	x := f.event(HoldLater, p, proc, i)
	x.Key, x.Invoke, x.Call = inv.key, inv.index, inv.call
	switch inv.f {
	case history.FRelease:
		x.Release = true
	case history.FRenew:
		x.Lease = renewalLease(inv.ttl, done, fk.lease)
	case history.FAcquire:
		var ok history.Op // an acquire of unknown outcome has no ok to take its lease from
		if done.Type == history.OK {
			ok = *done
		}
		x.Lease, x.Session = leaseOf(inv.ttl, &ok)
	}
	kept := fk.later[:0]
	for _, c := range fk.later {
		if x.Call >= c.bound {
			// nothing from here on ends its hold any earlier
			out = f.settled(out, p, proc, i, inv.key, c.grant)
			continue
		}
		x.Grant = c.grant
		out = append(out, x)
		if x.Release {
			continue // the release settles it: no HoldSettled
		}
		c.bound = min(c.bound, leaseEnd(x.Call, x.Lease, 0))
		kept = append(kept, c)
	}
	fk.later = kept
	return out
}

// settled is the HoldSettled event of grant g of process proc (p), key k,
// found at op i.
func (f *Follower) settled(out []HoldEvent, p *followProc, proc, i int, k string, g int) []HoldEvent {
	e := f.event(HoldSettled, p, proc, i)
	e.Grant, e.Key = g, k
	return append(out, e)
}

// End ends the history and appends to out the events that makes: the
// lock ops still outstanding join the Later of the grants they could end
// earlier (in the order of their invokes), and the beliefs still open end
// at their until, or without end (Forever), in the order of their grants.
func (f *Follower) End(out []HoldEvent) []HoldEvent {
	type live struct {
		proc int
		p    *followProc
	}
	var ps []live
	f.procs.each(func(proc int, p *followProc) { ps = append(ps, live{proc, p}) })
	slices.SortFunc(ps, func(a, b live) int { return cmp.Compare(a.p.pending.index, b.p.pending.index) })
	for _, l := range ps {
		if l.p.pending.index >= 0 {
			out = f.later(out, l.p, l.proc, f.n, &l.p.pending, &history.Op{})
		}
	}
	var ended []HoldEvent
	for _, l := range ps {
		for _, fk := range l.p.keys {
			if !fk.open {
				continue
			}
			e := f.event(HoldEnded, l.p, l.proc, f.n)
			e.Grant, e.Key, e.Time, e.Reason, e.Until = fk.latest, fk.key, Forever, EndOpen, fk.until
			if fk.until != 0 {
				e.Time = max(fk.until, fk.start)
			}
			ended = append(ended, e)
		}
	}
	slices.SortFunc(ended, func(a, b HoldEvent) int { return cmp.Compare(a.Grant, b.Grant) })
	return append(out, ended...)
}

// leaseOf applies docs/history.md §3's rule for a grant's lease: the ok's
// `lease`, else the invoke's `ttl`, else none (a session lock).
func leaseOf(ttl time.Duration, ok *history.Op) (time.Duration, bool) {
	switch {
	case ok.Lease != 0:
		return ok.Lease, ok.Session
	case ttl > 0:
		return ttl, ok.Session
	}
	return history.NoLease, true
}

// renewalLease applies §3's rule for a renewal's lease: its ok's `lease`
// (done is the zero op for a renewal of unknown outcome), else its
// invoke's `ttl`, else its grant's lease.
func renewalLease(ttl time.Duration, done *history.Op, grant time.Duration) time.Duration {
	switch {
	case done.Type == history.OK && done.Lease != 0:
		return done.Lease
	case ttl != 0:
		return ttl
	}
	return grant
}

// followHistory runs a Follower over h to its end and returns every event
// it made, in order.
func followHistory(h history.History) []HoldEvent {
	f := NewFollower()
	var evs []HoldEvent
	for i := range h {
		evs = f.Add(&h[i], evs)
	}
	return f.End(evs)
}

// feedFollowed feeds a check the ops of a history (ops, each at its
// Index) and the Follower's events over them (holds, in order): each op to
// add (when set), then the events its feeding made to hold; events made
// past the last op (Follower.End's) are left to the caller. It returns the
// events not fed.
func feedFollowed(ops []history.Op, holds []HoldEvent, add func(*history.Op), hold func(*HoldEvent)) []HoldEvent {
	for i := range ops {
		op := &ops[i]
		if add != nil {
			add(op)
		}
		for len(holds) > 0 && holds[0].Index <= op.Index {
			hold(&holds[0])
			holds = holds[1:]
		}
	}
	return holds
}

// Clone returns a copy of f that shares nothing with it: a reading can go
// on from where f stands (a checkpoint) while f goes on.
func (f *Follower) Clone() *Follower {
	c := &Follower{n: f.n, grants: f.grants, kept: make(map[int][]int, len(f.kept))}
	for w, ps := range f.kept {
		c.kept[w] = slices.Clone(ps)
	}
	f.procs.each(func(proc int, p *followProc) {
		q := *p
		q.keys = slices.Clone(p.keys)
		for k := range q.keys {
			q.keys[k].later = slices.Clone(q.keys[k].later)
		}
		c.procs.set(proc, &q)
	})
	return c
}

// feedHoldsFirst is feedFollowed for a check that reads an op's events
// before the op: the events its feeding made to hold, then the op to add.
// The events of the end are fed too.
func feedHoldsFirst(ops []history.Op, holds []HoldEvent, add func(*history.Op), hold func(*HoldEvent)) {
	for i := range ops {
		op := &ops[i]
		for len(holds) > 0 && holds[0].Index <= op.Index {
			hold(&holds[0])
			holds = holds[1:]
		}
		add(op)
	}
	for i := range holds {
		hold(&holds[i])
	}
}

// followEach feeds h op by op to a check that reads an op's events before
// the op, running a Follower beside it: each op's events to hold, then the
// op to add, and the events of the end to hold. It keeps no event past
// its op.
func followEach(h history.History, add func(*history.Op), hold func(*HoldEvent)) {
	f := NewFollower()
	var evs []HoldEvent
	for i := range h {
		evs = f.Add(&h[i], evs[:0])
		for j := range evs {
			hold(&evs[j])
		}
		add(&h[i])
	}
	evs = f.End(evs[:0])
	for j := range evs {
		hold(&evs[j])
	}
}
