package reference

import (
	"fmt"
	"slices"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// lockKind is the kind of an op of the lease model (§4.1).
type lockKind int

const (
	kGrant   lockKind = iota // an acquire: ok, or of unknown outcome
	kRelease                 // a release: ok, or of unknown outcome
	kRenew                   // a renew: ok, or of unknown outcome
)

// lockOp is one op of a key's lease model.
type lockOp struct {
	*opCall
	kind    lockKind
	unknown bool  // info or pending: may take effect after its call, or never
	lease   int64 // a grant's L or a renew's L' (-1: never expires)
	session bool  // a grant's session flag
	// fromCall: a grant's L is its ok's `lease`, counted from its call;
	// otherwise (the invoke's ttl) it counts from the grant's instant
	fromCall bool
	g        *grant
}

// retTime is o's return time in the lease arithmetic: never (+∞) for an op
// of unknown outcome.
func (o *lockOp) retTime() int64 {
	if o.unknown {
		return never
	}
	return o.ret
}

// retIdx is the history index of o's return, which orders it: never for an
// op of unknown outcome.
func (o *lockOp) retIdx() int64 {
	if o.unknown {
		return never
	}
	return int64(o.done)
}

// lockOps returns key's ops of the lease model, in invoke order: every
// acquire, release and renew of the key that did not fail. Those of unknown
// outcome (info, pending) are flagged; failed ones are left out.
func lockOps(x *parsed, key string) []*lockOp {
	var ops []*lockOp
	for _, c := range x.calls {
		if c.key != key || c.typ == history.Fail {
			continue
		}
		o := &lockOp{opCall: c, unknown: c.unknown}
		switch c.f {
		case history.FAcquire:
			o.kind = kGrant
			o.lease, o.session = acquireLease(c)
			o.fromCall = c.typ == history.OK && c.doneOp.Lease != 0
			for _, g := range x.grants {
				if g.opCall == c {
					o.g = g
				}
			}
		case history.FRelease:
			o.kind = kRelease
		case history.FRenew:
			o.kind = kRenew
			o.lease = x.renewLease(c)
		default:
			continue
		}
		ops = append(ops, o)
	}
	return ops
}

// state is the lease model's state: the holder (-1 for none), its grant, the
// earliest expiry E of its lease, and now, the instant at which the last op
// applied took effect (0 before any).
type state struct {
	holder int
	by     *lockOp
	e      int64
	now    int64
}

var free = state{holder: -1, e: never}

// step applies o to s as §4.1 says, and reports whether o is possible. An
// op of unknown outcome is applied as its ok would be; its return is +∞.
//
// Each op takes effect at one instant in [call, return], and the ops take
// effect in the order of their instants: o's instant is at or after its
// call and at or after s.now, the instant of the op applied before it; a
// grant that takes the lock over from another holder p, at or after p's E,
// or, when p's grant is a session lock and p crashed before o's return
// (history order), at or after p's crash, whichever comes first. o is
// possible only when that instant is no later than its return; it then
// becomes now. Instants are taken as early as the rules allow: an earlier
// one never makes a later op less possible.
func step(x *parsed, s state, o *lockOp, d float64) (state, bool) {
	at := max(s.now, o.call) // o's instant, at the earliest
	switch o.kind {
	case kGrant:
		if s.holder >= 0 && s.holder != o.proc {
			p := s.holder
			// the earliest instant at which p's hold may have ended: E, or
			// for a session lock p's crash, when p crashed before r in
			// history order
			end := s.e
			if s.by.session && x.freedIdxOf(p) < o.retIdx() {
				end = min(end, x.freedOf(p))
			}
			if end == never {
				return s, false
			}
			at = max(at, end)
		}
		if at > o.retTime() {
			return s, false
		}
		// a recorded lease counts from the grant's call, whenever the
		// grant took effect; a ttl standing for it, from the grant's
		// instant (the server's lease begins when it grants)
		base := at
		if o.fromCall {
			base = o.call
		}
		return state{holder: o.proc, by: o, e: scaled(base, o.lease, d), now: at}, true
	case kRelease:
		if s.holder != o.proc || at > o.retTime() {
			return s, false
		}
		return state{holder: -1, e: never, now: at}, true
	default: // renew
		if at > o.retTime() {
			return s, false
		}
		s.now = at
		if s.holder == o.proc {
			s.e = scaled(o.call, o.lease, d)
		}
		return s, true
	}
}

// orderable reports whether some order of ops consistent with the history's
// order makes every op possible, starting from a free lock. An op may be
// placed next when no op still to be placed returned before it was invoked
// (completion index before invoke index). Ops of unknown outcome never
// return: they may be placed anywhere after their invoke, where possible,
// or left out. Plain backtracking over every such order: exponential, and
// meant to be.
func orderable(x *parsed, ops []*lockOp, d float64) bool {
	placed := make([]bool, len(ops))
	var try func(s state) bool
	try = func(s state) bool {
		done := true
		for i, o := range ops {
			if !placed[i] && !o.unknown {
				done = false
			}
		}
		if done {
			return true
		}
		for i, o := range ops {
			if placed[i] {
				continue
			}
			next := true
			for j, a := range ops {
				if j != i && !placed[j] && a.retIdx() < int64(o.inv) {
					next = false
					break
				}
			}
			if !next {
				continue
			}
			ns, ok := step(x, s, o, d)
			if !ok {
				continue
			}
			placed[i] = true
			if try(ns) {
				return true
			}
			placed[i] = false
		}
		return false
	}
	return try(free)
}

// asUnknown is a copy of o as an op of unknown outcome.
func asUnknown(o *lockOp) *lockOp {
	c := *o
	c.unknown = true
	return &c
}

// prefix is the set §4.1's culprit rule judges at the completion of history
// op c: the ops of piece completed up to and including c (one of unknown
// outcome, completed as info, stays so), together with the ops invoked
// before c and still outstanding there, taken as of unknown outcome. Failed
// ops are not in piece: they are left out even while outstanding.
func prefix(piece []*lockOp, c int) []*lockOp {
	var set []*lockOp
	for _, o := range piece {
		switch {
		case o.inv > c:
		case o.done >= 0 && o.done <= c:
			set = append(set, o)
		default:
			set = append(set, asUnknown(o))
		}
	}
	return set
}

// leaseModel judges each key by §4.1 and returns the culprits' kinds: the
// key's model ops are cut at every quiescent point into pieces, each judged
// on its own from a free lock, with at most one culprit. An op of unknown
// outcome belongs to the piece of its invoke: it takes effect before the
// next quiescent point, if at all.
func leaseModel(x *parsed, d float64) []string {
	var keys []string
	for _, c := range x.calls {
		if !slices.Contains(keys, c.key) {
			keys = append(keys, c.key)
		}
	}
	var kinds []string
	for _, key := range keys {
		all := lockOps(x, key)
		for from := 0; from < len(all); {
			end := len(all)
			for i := from + 1; i < len(all); i++ {
				if quiescent(x, all, i, d) {
					end = i
					break
				}
			}
			c, o := culprit(x, all[from:end], d)
			switch {
			case o == nil:
			case o.kind == kGrant:
				kinds = append(kinds, checker.EarlyGrant)
			case o.kind == kRelease:
				kinds = append(kinds, checker.ForeignRelease)
			default:
				panic(fmt.Sprintf("reference: a renewal (op %d) is the culprit", c))
			}
			from = end
		}
	}
	return kinds
}

// culprit finds the culprit of piece (§4.1): over the completions of its
// ops in history order, the first completion c at which the prefix cannot
// be ordered, and the op completed there. nil when piece is valid.
func culprit(x *parsed, piece []*lockOp, d float64) (int, *lockOp) {
	if orderable(x, piece, d) {
		return 0, nil // the piece is valid: no culprit
	}
	var done []*lockOp
	for _, o := range piece {
		if o.done >= 0 {
			done = append(done, o)
		}
	}
	slices.SortFunc(done, func(a, b *lockOp) int { return a.done - b.done })
	for _, o := range done {
		if !orderable(x, prefix(piece, o.done), d) {
			return o.done, o
		}
	}
	panic("reference: a key's ops cannot be ordered, but every prefix can")
}

// quiescent reports whether the invoke of all[i] is a quiescent point
// (§4.1): every earlier model op of the key has returned before it (one of
// unknown outcome at its process's crash, never when it did not crash), and
// every process that may still hold the lock has crashed before it and,
// unless its grant is a session lock, has a lease that may have expired by
// its time.
func quiescent(x *parsed, all []*lockOp, i int, d float64) bool {
	at, t := int64(all[i].inv), all[i].call
	earlier := all[:i] // the ops invoked before it
	for _, o := range earlier {
		ret := int64(o.done)
		if o.unknown {
			ret = x.crashIdxOf(o.proc)
		}
		if ret >= at {
			return false
		}
	}
	var procs []int
	for _, o := range earlier {
		if !slices.Contains(procs, o.proc) {
			procs = append(procs, o.proc)
		}
	}
	for _, p := range procs {
		g := latestGrant(earlier, p)
		if g == nil || !mayHold(earlier, g) {
			continue
		}
		if x.crashIdxOf(p) >= at || g.session && x.freedIdxOf(p) >= at {
			return false
		}
		if !g.session && !mayHaveExpired(x, earlier, g, t, d) {
			return false
		}
	}
	return true
}

// latestGrant is p's latest grant (ok) among ops, nil when none.
func latestGrant(ops []*lockOp, p int) *lockOp {
	var g *lockOp
	for _, o := range ops {
		if o.kind == kGrant && !o.unknown && o.proc == p && (g == nil || o.done > g.done) {
			g = o
		}
	}
	return g
}

// mayHold reports whether the grant g may still hold the lock after ops:
// it is not followed by its process's own release (ok or of unknown
// outcome), and no grant (ok) of another process was invoked after it
// returned.
func mayHold(ops []*lockOp, g *lockOp) bool {
	for _, o := range ops {
		if o.kind == kRelease && o.proc == g.proc && o.inv > g.done {
			return false
		}
		if o.kind == kGrant && !o.unknown && o.proc != g.proc && o.inv > g.done {
			return false
		}
	}
	return true
}

// mayHaveExpired reports whether g's lease may have expired by time t:
// t ≥ g's return + L × (1 − d), or, after a renew ok of g among ops,
// t ≥ the latest such renew's call + L' × (1 − d). A lease of -1 never
// expires. Renewals of unknown outcome change no bound.
func mayHaveExpired(x *parsed, ops []*lockOp, g *lockOp, t int64, d float64) bool {
	e := scaled(g.ret, g.lease, d)
	var latest *lockOp
	for _, o := range ops {
		if o.kind == kRenew && !o.unknown && o.proc == g.proc && x.grantOf(o.opCall) == g.g && (latest == nil || o.done > latest.done) {
			latest = o
		}
	}
	if latest != nil {
		e = scaled(latest.call, latest.lease, d)
	}
	return e != never && t >= e
}
