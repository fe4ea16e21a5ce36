package checker

import (
	"math"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// This file is the one implementation of the definitions every checker and
// the report's timeline share (docs/history.md §3): crashes, grants and their
// leases, renewals, beliefs, lease order, and the writes' apply intervals.

// Forever is the end of a belief that nothing ends, and the end of the apply
// interval of a write that never completed.
const Forever = time.Duration(math.MaxInt64)

// Grant is one successful acquisition: an acquire ok.
type Grant struct {
	Key     string
	Process int
	Client  int
	// Invoke and OK are the op indexes of the acquire's invoke and ok.
	Invoke, OK int
	// Call and Return are their times.
	Call, Return time.Duration
	Token        uint64
	// Lease is the server-side lease counted from Call: the ok's `lease`,
	// else the invoke's `ttl`; history.NoLease when the service never frees
	// the lock on its own (also when both are absent: a session lock).
	Lease time.Duration
	// Session is true when closing the client frees the lock (the ok's
	// `session`, or a lock with neither `lease` nor `ttl`).
	Session bool
	// Renewals are the renew oks of this grant, in history order.
	Renewals []Renewal
	// Later are the lock ops of the grant's process on its key after it
	// that may have taken effect (ok, or of unknown outcome), up to and
	// including the first such release, and only while they could end the
	// process's hold earlier than the ops before them (lease order,
	// docs/history.md §3: an op called after that moment ends nothing
	// earlier, under any drift).
	Later []LaterOp
	// Closed is the op index at which the grant's client was closed (its
	// process's crash, or for a kept crash the next crash of its worker
	// that closed the client), -1 when it never was; ClosedAt is its time.
	Closed   int
	ClosedAt time.Duration
}

// LaterOp is a lock op of a grant's process on the grant's key, after the
// grant, that may have taken effect.
type LaterOp struct {
	Invoke int
	Call   time.Duration
	// Release is set for a release, which may free the lock from its call
	// on; otherwise the op is a renewal or an acquire whose lease (Lease,
	// counted from Call; history.NoLease for never) may replace the
	// grant's.
	Release bool
	Lease   time.Duration
	// Session is set for an acquire that is a session lock: the client's
	// close may end the hold.
	Session bool
}

// Renewal is a renew ok of a grant.
type Renewal struct {
	Invoke, OK   int
	Call, Return time.Duration
	// Lease is the renewed lease counted from Call: the ok's `lease`, else
	// the invoke's `ttl`, else the grant's lease.
	Lease time.Duration
	Until time.Duration
	// Token is the renew ok's token: pg-timeout's renewal hands out a new
	// one, every other renewal repeats its grant's.
	Token uint64
}

// EndReason says what ended a belief.
type EndReason uint8

// The reasons a belief ends, in docs/history.md §3's order.
const (
	EndOpen      EndReason = iota // still open at the end of the history
	EndRelease                    // the invoke of its release
	EndLeaseLost                  // the invoke of a lease-lost
	EndCrash                      // its process crashed
	EndReacquire                  // its process acquired the key again
	EndUntil                      // its until passed first
)

// Belief is the interval [Start, End) during which a process believed it
// held a key: from its grant's return to the earliest of its release's
// invoke, a lease-lost, its crash, its next grant of the key and its until.
type Belief struct {
	Grant int // index into Facts.Grants
	Start time.Duration
	End   time.Duration // Forever for an open belief without until
	// EndOp is the op that ended the belief, -1 when its until or the end
	// of the history did.
	EndOp  int
	Reason EndReason
	// Until is the until in force when the belief ended (0: none).
	Until time.Duration
}

// WriteStatus is what became of a write.
type WriteStatus uint8

// A write is accepted (ok), rejected (fail) or of unknown outcome (info, or
// pending at the end of the history).
const (
	Accepted WriteStatus = iota
	Rejected
	UnknownOutcome
)

// Write is one write to the protected resource.
type Write struct {
	Key    string
	Status WriteStatus
	// Invoke and Done are the op indexes of its invoke and completion (Done
	// is -1 when it never completed).
	Invoke, Done int
	// Lo and Hi bound the moment it took effect: [applied, applied] where
	// the history gives `applied`, else [invoke, completion] (Hi is Forever
	// for a write that never completed).
	Lo, Hi   time.Duration
	Exact    bool // Lo == Hi came from `applied`
	Token    uint64
	Value    int64
	HasValue bool
	// Grant is the index in Facts.Grants of the write's lease: its
	// process's latest grant of the key before the write; -1 when none.
	Grant int
}

// Read is an ok read of the resource.
type Read struct {
	Key          string
	Invoke, Done int
	Call, Return time.Duration
	Value        int64
	HasValue     bool
}

// Facts are the shared definitions evaluated over one well-formed history.
type Facts struct {
	Grants  []Grant
	Beliefs []Belief // Beliefs[i] is the belief of Grants[i]
	Writes  []Write  // in the order of their completions; those that never completed last
	Reads   []Read   // in the order of their completions
	// Version is the history's format version.
	Version int
	// Queue holds the queue workload's definitions (tasks.go).
	Queue *QueueFacts
}

// Older reports whether grant a is older than grant b (lease order,
// docs/history.md §3) under drift d in [0, 1): no reading of the ops lets
// b's grant take effect before a's. That is so when a returned before b was
// invoked (history order); and, when neither returned before the other was
// invoked, when b's hold could not have ended by a's return: a's return
// comes before HoldEnd(b, a's ok).
func (f *Facts) Older(a, b int, d float64) bool {
	if a == b {
		return false
	}
	ga, gb := &f.Grants[a], &f.Grants[b]
	switch {
	case ga.OK < gb.Invoke:
		return true
	case gb.OK < ga.Invoke:
		return false
	}
	return ga.Return < f.HoldEnd(b, ga.OK, d)
}

// HoldEnd is the earliest moment at which grant g's hold of its key may
// have ended in the lease model (§4.1), as seen by an op that returned at
// history index before, under drift d: g's lease from its call
// (call + L × (1 − d), never for L = -1); the call of its process's release
// of the key, and the call plus lease of its renewal or re-acquisition,
// invoked before that return (ok, or of unknown outcome); and, when g or
// such a re-acquisition is a session lock, the close of its client before
// that return. Forever when nothing may end it.
func (f *Facts) HoldEnd(g, before int, d float64) time.Duration {
	gr := &f.Grants[g]
	end := leaseEnd(gr.Call, gr.Lease, d)
	session := gr.Session
	for _, x := range gr.Later {
		if x.Invoke >= before {
			continue
		}
		if x.Release {
			end = min(end, x.Call)
		} else {
			end = min(end, leaseEnd(x.Call, x.Lease, d))
		}
		session = session || x.Session
	}
	if session && gr.Closed >= 0 && gr.Closed < before {
		end = min(end, gr.ClosedAt)
	}
	return end
}

// leaseEnd is base + lease × (1 − d): the earliest moment a lease of that
// length counted from base may end; Forever for a lease that never ends.
func leaseEnd(base, lease time.Duration, d float64) time.Duration {
	if lease < 0 {
		return Forever
	}
	return time.Duration(satAdd(int64(base), scaleLease(lease, d)))
}

// grantLease applies docs/history.md §3's rule for a grant's lease to the
// acquire invoked by inv and completed by ok (leaseOf).
func grantLease(inv, ok *history.Op) (time.Duration, bool) { return leaseOf(inv.TTL, ok) }

// renewLease applies §3's rule for a renewal's lease to the renew invoked
// by inv and completed by done (renewalLease).
func renewLease(inv, done *history.Op, grant time.Duration) time.Duration {
	return renewalLease(inv.TTL, done, grant)
}

// Analyze evaluates the shared definitions over h, which must be
// well-formed (history.Validate): the Follower run to the end of h, its
// events recorded as Facts, with the writes and reads.
func Analyze(h history.History) *Facts {
	a := newAnalysis(h)
	fol := NewFollower()
	var evs []HoldEvent
	for i := range h {
		evs = a.add(fol, &h[i], i, evs[:0])
	}
	a.end(fol, fol.End(evs[:0]))
	a.f.Queue = analyzeQueue(h)
	return a.f
}

// analysis records a Follower's events over a history as its Facts, with
// the writes and reads.
type analysis struct {
	h history.History
	f *Facts
	// byProc are each process's grants, which its client's close closes.
	byProc map[int][]int
	// writing are the processes' outstanding writes: process -> invoke.
	writing map[int]int
}

// newAnalysis sizes the Facts of h.
func newAnalysis(h history.History) *analysis {
	var grants, writes, reads int
	for i := range h {
		op := &h[i]
		switch {
		case op.IsNemesis() || op.Type == history.Invoke:
		case op.F == history.FAcquire && op.Type == history.OK:
			grants++
		case op.F == history.FWrite:
			writes++
		case op.F == history.FRead:
			reads++
		}
	}
	f := &Facts{Version: history.Version(h)}
	f.Grants = make([]Grant, 0, grants)
	f.Beliefs = make([]Belief, 0, grants)
	f.Writes = make([]Write, 0, writes)
	f.Reads = make([]Read, 0, reads)
	return &analysis{h: h, f: f, byProc: map[int][]int{}, writing: map[int]int{}}
}

// add feeds op, at index i, to fol, records the events it makes (in evs,
// which it returns for reuse), and takes op's write or read.
func (a *analysis) add(fol *Follower, op *history.Op, i int, evs []HoldEvent) []HoldEvent {
	inv, latest := -1, -1
	if !op.IsNemesis() && op.Type != history.Invoke {
		// before the op: a crash forgets its process
		inv = fol.Invoke(op.Process)
		if op.F == history.FWrite {
			latest = fol.Latest(op.Process, op.Key)
		}
	}
	evs = fol.Add(op, evs)
	for k := range evs {
		a.record(&evs[k])
	}
	switch {
	case op.IsNemesis():
	case op.Type == history.Invoke:
		if op.F == history.FWrite {
			a.writing[op.Process] = i
		}
	case inv < 0:
	case op.F == history.FRead && op.Type == history.OK:
		in := &a.h[inv]
		r := Read{Key: op.Key, Invoke: inv, Done: i, Call: in.Time, Return: op.Time}
		r.Value, r.HasValue = op.Int()
		a.f.Reads = append(a.f.Reads, r)
	case op.F == history.FWrite:
		delete(a.writing, op.Process)
		a.f.Writes = append(a.f.Writes, newWrite(a.h, inv, i, latest))
	}
	return evs
}

// record takes one event of the Follower.
func (a *analysis) record(e *HoldEvent) {
	f := a.f
	switch e.Kind {
	case HoldGranted:
		f.Grants = append(f.Grants, Grant{Key: e.Key, Process: e.Process, Client: e.Client, Invoke: e.Invoke, OK: e.OK(),
			Call: e.Call, Return: e.Time, Token: e.Token, Lease: e.Lease, Session: e.Session, Closed: -1})
		f.Beliefs = append(f.Beliefs, Belief{Grant: e.Grant, Start: e.Time, End: Forever, EndOp: -1, Reason: EndOpen, Until: e.Until})
		a.byProc[e.Process] = append(a.byProc[e.Process], e.Grant)
	case HoldRenewed:
		gr := &f.Grants[e.Grant]
		gr.Renewals = append(gr.Renewals, Renewal{Invoke: e.Invoke, OK: e.OK(), Call: e.Call, Return: e.Time, Lease: e.Lease, Until: e.Until, Token: e.Token})
	case HoldEnded:
		bl := &f.Beliefs[e.Grant]
		bl.End, bl.EndOp, bl.Reason, bl.Until = e.Time, e.EndOp(), e.Reason, e.Until
	case HoldLater:
		gr := &f.Grants[e.Grant]
		gr.Later = append(gr.Later, LaterOp{Invoke: e.Invoke, Call: e.Call, Release: e.Release, Lease: e.Lease, Session: e.Session})
	case HoldClosed:
		for _, g := range a.byProc[e.Process] {
			f.Grants[g].Closed, f.Grants[g].ClosedAt = e.Index, e.Time
		}
	}
}

// end records the events of the end of the history, and the writes that
// never completed, in the order of their invokes.
func (a *analysis) end(fol *Follower, evs []HoldEvent) {
	for k := range evs {
		a.record(&evs[k])
	}
	never := make([]int, 0, len(a.writing))
	for _, inv := range a.writing {
		never = append(never, inv)
	}
	slices.Sort(never)
	for _, inv := range never {
		in := &a.h[inv]
		a.f.Writes = append(a.f.Writes, newWrite(a.h, inv, -1, fol.Latest(in.Process, in.Key)))
	}
}

// newWrite describes the write invoked at op inv and completed at op done
// (-1: never), whose lease is the grant at index grant (-1: none).
func newWrite(h history.History, inv, done, grant int) Write {
	in := &h[inv]
	w := Write{Key: in.Key, Status: UnknownOutcome, Invoke: inv, Done: done, Lo: in.Time, Hi: Forever, Token: in.Token, Grant: grant}
	w.Value, w.HasValue = in.Int()
	if done < 0 {
		return w
	}
	op := &h[done]
	switch op.Type {
	case history.OK:
		w.Status = Accepted
	case history.Fail:
		w.Status = Rejected
	}
	if w.Status != UnknownOutcome {
		w.Hi = op.Time
		if op.Applied != 0 {
			w.Lo, w.Hi, w.Exact = op.Applied, op.Applied, true
		}
	}
	if op.Token != 0 {
		w.Token = op.Token
	}
	if v, ok := op.Int(); ok {
		w.Value, w.HasValue = v, true
	}
	return w
}
