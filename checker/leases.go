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

// grantLease applies docs/history.md §3's rule for a grant's lease.
func grantLease(inv, ok *history.Op) (time.Duration, bool) {
	switch {
	case ok.Lease != 0:
		return ok.Lease, ok.Session
	case inv.TTL > 0:
		return inv.TTL, ok.Session
	}
	return history.NoLease, true
}

// collecting is a grant whose Later Analyze still collects, with the
// earliest moment its hold may end with no drift, as far as seen.
type collecting struct {
	grant int
	bound time.Duration
}

// renewLease applies §3's rule for a renewal's lease: its ok's `lease`
// (done is the zero op for a renewal of unknown outcome), else its invoke's
// `ttl`, else its grant's lease.
func renewLease(inv, done *history.Op, grant time.Duration) time.Duration {
	switch {
	case done.Type == history.OK && done.Lease != 0:
		return done.Lease
	case inv.TTL != 0:
		return inv.TTL
	}
	return grant
}

// closeAt is when a process's client was closed: an op index (-1: never)
// and its time.
type closeAt struct {
	idx int
	at  time.Duration
}

// clientCloses finds, for each process (numbered by ids), when its client
// was closed (docs/history.md §1): at its crash, or, for a crash that kept
// the client, at the next crash of its worker that did not.
func clientCloses(h history.History, ids map[int]int32) []closeAt {
	out := make([]closeAt, len(ids))
	crashed := make([]bool, len(ids))
	for i := range out {
		out[i].idx = -1
	}
	kept := map[int][]int32{} // by worker: crashed processes whose client lives on
	for i := range h {
		op := &h[i]
		if op.IsNemesis() || op.Type != history.Info {
			continue
		}
		id := ids[op.Process]
		if crashed[id] {
			continue
		}
		crashed[id] = true
		if op.Kept {
			kept[op.Client] = append(kept[op.Client], id)
			continue
		}
		for _, k := range append(kept[op.Client], id) {
			out[k] = closeAt{idx: i, at: op.Time}
		}
		delete(kept, op.Client)
	}
	return out
}

// Analyze evaluates the shared definitions over h, which must be
// well-formed (history.Validate).
func Analyze(h history.History) *Facts {
	f := &Facts{Version: history.Version(h)}
	// Processes are numbered densely, so per-process state lives in slices;
	// each process touches few keys, kept in a short list.
	ids := map[int]int32{}
	var grants, writes, reads int
	for i := range h {
		op := &h[i]
		if op.IsNemesis() {
			continue
		}
		if _, ok := ids[op.Process]; !ok {
			ids[op.Process] = int32(len(ids))
		}
		switch {
		case op.Type == history.Invoke:
		case op.F == history.FAcquire:
			if op.Type == history.OK {
				grants++
			}
		case op.F == history.FWrite:
			writes++
		case op.F == history.FRead:
			reads++
		}
	}
	f.Grants = make([]Grant, 0, grants)
	f.Beliefs = make([]Belief, 0, grants)
	f.Writes = make([]Write, 0, writes+len(ids))
	f.Reads = make([]Read, 0, reads)
	type keyState struct {
		key    string
		latest int // latest grant, -1 for none
		open   bool
		until  time.Duration
		// later are the grants whose Later is still being collected: those
		// since the last release that a later op could still end earlier,
		// each with bound, the earliest its hold may end with no drift
		// (an op called at or after it ends nothing earlier, under any
		// drift)
		later []collecting
	}
	type proc struct {
		pending int
		keys    []keyState
	}
	procs := make([]proc, len(ids))
	for i := range procs {
		procs[i].pending = -1
	}
	closed := clientCloses(h, ids)
	stateOf := func(p *proc, key string) *keyState {
		for i := range p.keys {
			if p.keys[i].key == key {
				return &p.keys[i]
			}
		}
		p.keys = append(p.keys, keyState{key: key, latest: -1})
		return &p.keys[len(p.keys)-1]
	}
	closeB := func(ks *keyState, at time.Duration, op int, why EndReason) {
		if !ks.open {
			return
		}
		ks.open = false
		bl := &f.Beliefs[ks.latest]
		bl.End, bl.EndOp, bl.Reason, bl.Until = at, op, why, ks.until
		if ks.until != 0 && ks.until < at {
			bl.End, bl.EndOp, bl.Reason = max(ks.until, bl.Start), -1, EndUntil
		}
	}
	// addLater adds the lock op invoked at inv and completed at done (a
	// zero op: never) to the Later of each grant of its process and key
	// since the process's last release of the key.
	addLater := func(ks *keyState, inv, done *history.Op) {
		if len(ks.later) == 0 {
			return
		}
		x := LaterOp{Invoke: inv.Index, Call: inv.Time}
		switch inv.F {
		case history.FRelease:
			x.Release = true
		case history.FRenew:
			x.Lease = renewLease(inv, done, f.Grants[ks.latest].Lease)
		case history.FAcquire:
			var ok history.Op // an acquire of unknown outcome has no ok to take its lease from
			if done.Type == history.OK {
				ok = *done
			}
			x.Lease, x.Session = grantLease(inv, &ok)
		default:
			return
		}
		kept := ks.later[:0]
		for _, c := range ks.later {
			if x.Call >= c.bound {
				continue // nothing from here on ends its hold any earlier
			}
			f.Grants[c.grant].Later = append(f.Grants[c.grant].Later, x)
			if x.Release {
				continue
			}
			c.bound = min(c.bound, leaseEnd(x.Call, x.Lease, 0))
			kept = append(kept, c)
		}
		ks.later = kept
	}
	latestOf := func(p *proc, key string) int {
		for i := range p.keys {
			if p.keys[i].key == key {
				return p.keys[i].latest
			}
		}
		return -1
	}
	for i := range h {
		op := &h[i]
		if op.IsNemesis() {
			continue
		}
		p := &procs[ids[op.Process]]
		if op.Type == history.Invoke {
			p.pending = i
			switch op.F {
			case history.FRelease:
				closeB(stateOf(p, op.Key), op.Time, i, EndRelease)
			case history.FLeaseLost:
				closeB(stateOf(p, op.Key), op.Time, i, EndLeaseLost)
			}
			continue
		}
		inv := p.pending
		if inv < 0 {
			continue // not well-formed; Validate says so
		}
		p.pending = -1
		invOp := &h[inv]
		if op.Type != history.Fail {
			addLater(stateOf(p, op.Key), invOp, op)
		}
		switch {
		case op.F == history.FAcquire && op.Type == history.OK:
			ks := stateOf(p, op.Key)
			closeB(ks, op.Time, i, EndReacquire)
			lease, session := grantLease(invOp, op)
			g := len(f.Grants)
			c := closed[ids[op.Process]]
			f.Grants = append(f.Grants, Grant{Key: op.Key, Process: op.Process, Client: op.Client, Invoke: inv, OK: i,
				Call: invOp.Time, Return: op.Time, Token: op.Token, Lease: lease, Session: session, Closed: c.idx, ClosedAt: c.at})
			f.Beliefs = append(f.Beliefs, Belief{Grant: g, Start: op.Time, End: Forever, EndOp: -1, Reason: EndOpen})
			ks.latest, ks.open, ks.until = g, true, op.Until
			ks.later = append(ks.later, collecting{grant: g, bound: leaseEnd(invOp.Time, lease, 0)})
		case op.F == history.FRenew && op.Type == history.OK:
			ks := stateOf(p, op.Key)
			if ks.latest < 0 {
				break
			}
			gr := &f.Grants[ks.latest]
			lease := renewLease(invOp, op, gr.Lease)
			gr.Renewals = append(gr.Renewals, Renewal{Invoke: inv, OK: i, Call: invOp.Time, Return: op.Time, Lease: lease, Until: op.Until, Token: op.Token})
			if ks.open && op.Until != 0 && (ks.until == 0 || op.Time <= ks.until) {
				ks.until = op.Until
			}
		case op.F == history.FRead && op.Type == history.OK:
			r := Read{Key: op.Key, Invoke: inv, Done: i, Call: invOp.Time, Return: op.Time}
			r.Value, r.HasValue = op.Int()
			f.Reads = append(f.Reads, r)
		case op.F == history.FWrite:
			f.Writes = append(f.Writes, newWrite(h, inv, i, latestOf(p, op.Key)))
		}
		if op.Type == history.Info {
			for k := range p.keys {
				closeB(&p.keys[k], op.Time, i, EndCrash)
			}
		}
	}
	var never []int
	for i := range procs {
		inv := procs[i].pending
		if inv < 0 {
			continue
		}
		if h[inv].F == history.FWrite {
			never = append(never, inv)
		} else {
			addLater(stateOf(&procs[i], h[inv].Key), &h[inv], &history.Op{})
		}
	}
	slices.Sort(never)
	for _, inv := range never {
		f.Writes = append(f.Writes, newWrite(h, inv, -1, latestOf(&procs[ids[h[inv].Process]], h[inv].Key)))
	}
	for i := range procs {
		for _, ks := range procs[i].keys {
			if ks.open {
				bl := &f.Beliefs[ks.latest]
				bl.Until = ks.until
				if ks.until != 0 {
					bl.End = max(ks.until, bl.Start)
				}
			}
		}
	}
	f.Queue = analyzeQueue(h)
	return f
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
