package reference

import (
	"slices"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// lockKind is the kind of an op of the lease model (§4.1).
type lockKind int

const (
	kGrant   lockKind = iota // an acquire ok
	kRelease                 // a release ok, or a release of unknown outcome
	kRenew                   // a renew ok
)

// lockOp is one op of a key's lease model.
type lockOp struct {
	*opCall
	kind    lockKind
	unknown bool  // a release of unknown outcome: no return, may be left out
	failed  bool  // a release that failed: not an op of the model
	lease   int64 // a grant's L or a renew's L' (-1: never expires)
	session bool  // a grant's session flag
	g       *grant
}

// lockOps returns key's ops of the lease model, in invoke order, together
// with its failed releases (flagged; they are not ops of the model, but
// they were outstanding until they failed). Failed acquires and renews and
// acquires and renews of unknown outcome are left out.
func lockOps(x *parsed, key string) []*lockOp {
	var ops []*lockOp
	for _, c := range x.calls {
		if c.key != key {
			continue
		}
		switch {
		case c.f == history.FAcquire && c.typ == history.OK:
			for _, g := range x.grants {
				if g.opCall == c {
					ops = append(ops, &lockOp{opCall: c, kind: kGrant, lease: g.lease, session: g.session, g: g})
				}
			}
		case c.f == history.FRelease:
			ops = append(ops, &lockOp{opCall: c, kind: kRelease, unknown: c.unknown, failed: c.typ == history.Fail})
		case c.f == history.FRenew && c.typ == history.OK:
			ops = append(ops, &lockOp{opCall: c, kind: kRenew, lease: x.renewLease(c)})
		}
	}
	return ops
}

// state is the lease model's state: the holder (-1 for none), its grant, the
// earliest expiry E of its lease and freed, the call of the release that
// last freed the lock.
type state struct {
	holder int
	by     *lockOp
	e      int64
	freed  int64
}

var free = state{holder: -1, e: never, freed: -1 << 63}

// step applies o to s as §4.1 says, and reports whether o is possible.
func step(x *parsed, s state, o *lockOp, d float64) (state, bool) {
	switch o.kind {
	case kGrant:
		q := o.proc
		base := max(o.call, s.freed)
		if s.holder >= 0 && s.holder != q {
			p := s.holder
			expired := s.e != never && o.ret >= s.e
			crashed := s.by.session && x.crashOf(p) < o.ret
			if !expired && !crashed {
				return s, false
			}
			// taken over from p: the lease begins no earlier than F_p, the
			// earliest moment p's hold could have ended on its own
			fp := s.e
			if s.by.session {
				fp = min(fp, x.crashOf(p))
			}
			base = max(base, fp)
		}
		return state{holder: q, by: o, e: scaled(base, o.lease, d), freed: s.freed}, true
	case kRelease:
		if s.holder == o.proc {
			return state{holder: -1, e: never, freed: max(s.freed, o.call)}, true
		}
		return s, o.unknown // a release of unknown outcome changes nothing there
	default: // renew
		if s.holder == o.proc {
			s.e = scaled(o.call, o.lease, d)
		}
		return s, true
	}
}

// retOf is o's return in the model: never for a release of unknown outcome.
func retOf(o *lockOp) int64 {
	if o.kind == kRelease && o.unknown {
		return never
	}
	return o.ret
}

// orderable reports whether some order of ops consistent with real time
// makes every op possible, starting from a free lock. An op may be placed
// next when no op still to be placed returned before it was called: real
// time alone orders ops, so with equal times an op invoked at T may come
// before one that returned at T, even of the same process. Releases
// of unknown outcome may be placed anywhere after their call or left out.
// Plain backtracking over every such order: exponential, and meant to be.
func orderable(x *parsed, ops []*lockOp, d float64) bool {
	placed := make([]bool, len(ops))
	var try func(s state) bool
	try = func(s state) bool {
		done := true
		for i, o := range ops {
			if !placed[i] && !(o.kind == kRelease && o.unknown) {
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
				if j != i && !placed[j] && retOf(a) < o.call {
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

// asUnknown is a copy of a release as one of unknown outcome.
func asUnknown(o *lockOp) *lockOp {
	c := *o
	c.unknown = true
	return &c
}

// prefix is the set §4.1's culprit rule judges at completion time t: the
// ops of piece completed at or before t (a release of unknown outcome that
// completed as info stays of unknown outcome), together with the releases
// called at or before t that are still outstanding at t, taken as of unknown
// outcome. Failed releases are not ops of the model and are left out even
// while they are outstanding: a release that later fails never took effect,
// and taking it as of unknown outcome until its failure would let it free
// the lock for a grant completed meanwhile, making the failed release the op
// "completed at t" (docs/history.md does not say this; see
// TestOutstandingReleaseThatFails). With tie set, of the ops completing
// exactly at t only keep is kept as it is (a release completing at t is
// then taken as of unknown outcome), for the rule on several ops completing
// at t.
func prefix(piece []*lockOp, t int64, tie bool, keep *lockOp) []*lockOp {
	var set []*lockOp
	for _, o := range piece {
		if o.failed {
			continue
		}
		if o.kind == kRelease && o.unknown {
			if o.call <= t {
				set = append(set, o)
			}
			continue
		}
		switch {
		case o.ret < t, o.ret == t && (!tie || o == keep):
			set = append(set, o)
		case o.kind == kRelease && o.call <= t:
			set = append(set, asUnknown(o))
		}
	}
	return set
}

// leaseModel judges each key by §4.1 and returns the culprits' kinds.
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
		from := 0 // the piece being judged: all[from:]
		for from < len(all) {
			piece := all[from:]
			t, culprits := culprit(x, piece, d)
			if culprits == nil {
				break
			}
			for _, o := range culprits {
				if o.kind == kGrant {
					kinds = append(kinds, checker.EarlyGrant)
				} else {
					kinds = append(kinds, checker.ForeignRelease)
				}
			}
			next := -1
			for i := from; i < len(all); i++ {
				if all[i].call > t && !all[i].failed && quiescent(x, all, i, d) {
					next = i
					break
				}
			}
			if next < 0 {
				break
			}
			from = next
		}
	}
	return kinds
}

// culprit finds the culprits of piece (§4.1): at the earliest completion
// time t at which the prefix cannot be ordered, the grants and successful
// releases completed at t; when several complete at t, those that cannot be
// ordered after the ops completed before t alone, or all of them when none
// can be singled out. nil when piece is valid (a prefix that cannot be
// ordered is no culprit then: an op completed later, such as a renew ok that
// shortened the lease, or with equal times a grant placed before a release,
// may be what orders it).
func culprit(x *parsed, piece []*lockOp, d float64) (int64, []*lockOp) {
	var model []*lockOp
	for _, o := range piece {
		if !o.failed {
			model = append(model, o)
		}
	}
	if orderable(x, model, d) {
		return 0, nil // the key's history is valid: no culprit
	}
	var times []int64
	for _, o := range piece {
		if !o.failed && retOf(o) != never {
			times = append(times, o.ret)
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	for _, t := range times {
		if orderable(x, prefix(piece, t, false, nil), d) {
			continue
		}
		var at []*lockOp
		for _, o := range piece {
			if !o.failed && retOf(o) == t && o.kind != kRenew {
				at = append(at, o)
			}
		}
		if len(at) <= 1 {
			return t, at
		}
		var single []*lockOp
		for _, o := range at {
			if !orderable(x, prefix(piece, t, true, o), d) {
				single = append(single, o)
			}
		}
		if len(single) == 0 {
			single = at
		}
		return t, single
	}
	return 0, nil
}

// quiescent reports whether the call of all[i] is a quiescent point (§4.1):
// every earlier op of the key has returned before it (a release of unknown
// outcome counts as returned at its process's crash), and every process that
// may still hold the lock has crashed before it and, unless its grant is a
// session lock, has a lease that may have expired by then.
func quiescent(x *parsed, all []*lockOp, i int, d float64) bool {
	at := all[i].call
	for _, o := range all[:i] {
		if o.failed {
			continue // not an op of the model
		}
		ret := o.ret
		if o.kind == kRelease && o.unknown {
			ret = x.crashOf(o.proc)
		}
		if ret >= at {
			return false
		}
	}
	for gi, g := range all[:i] {
		if g.kind != kGrant || !mayHold(all[:i], gi) {
			continue
		}
		if x.crashOf(g.proc) >= at {
			return false
		}
		if !mayHaveExpired(x, all[:i], g, at, d) {
			return false
		}
	}
	return true
}

// mayHold reports whether the grant ops[gi] may still hold the lock after
// ops: it is not followed by its process's own release (a successful one or
// one of unknown outcome), and no grant of another process was invoked after
// it returned.
func mayHold(ops []*lockOp, gi int) bool {
	g := ops[gi]
	for _, o := range ops[gi+1:] {
		if o.kind == kRelease && !o.failed && o.proc == g.proc {
			return false
		}
		if o.kind == kGrant && o.proc != g.proc && o.call > g.ret {
			return false
		}
	}
	return true
}

// mayHaveExpired reports whether g's lease may have expired by at: a
// session lock's hold ends with its holder's crash (checked by the caller);
// otherwise the lease runs to g's return + L × (1 − d), or, when a renew ok
// of g among ops returned later, to the latest such renew's return +
// L' × (1 − d). A lease of -1 never expires.
func mayHaveExpired(x *parsed, ops []*lockOp, g *lockOp, at int64, d float64) bool {
	if g.session {
		return true
	}
	e := scaled(g.ret, g.lease, d)
	for _, o := range ops {
		if o.kind == kRenew && o.proc == g.proc && x.grantOf(o.opCall) == g.g {
			e = scaled(o.ret, o.lease, d) // ops are in invoke order: the latest wins
		}
	}
	return e <= at
}
