package checker

import (
	"context"
	"encoding/binary"
	"slices"
)

// orderSearch decides whether the ops of one piece can be put in an order
// the lease model allows (docs/history.md §4.1, "The decision"). It is a
// depth-first search over the orders, as porcupine's, that uses the
// model's structure:
//   - an op of unknown outcome is placed only where it takes effect, never
//     as a step that changes nothing (which would multiply the orders by
//     the places it could take);
//   - a release or renewal of unknown outcome is not placed at all: it is
//     its process's last op, so all it can do is end its process's hold
//     earlier, and a grant that takes the lock over from that process
//     reads it as one more way the hold may have ended (a fold);
//   - an acquire of unknown outcome is placed only where it takes the lock
//     over from a holder with a renewal still to place (the renewal then
//     changes nothing), or may end its own process's hold earlier (an
//     earlier expiry, or a session lock where the lock was not one); anywhere else
//     it only adds a holder, which helps no op;
//   - of acquires of unknown outcome alike in all but their process, one
//     stands for the others where they may all come next;
//   - the states it has explored are remembered by the set of ops placed,
//     the holder and its grant, and a state is not explored again when one
//     with the same of those, an expiry no later and an instant no later
//     was (an earlier expiry or instant never makes an op less possible).
type orderSearch struct {
	ctx    context.Context
	known  []*lockOp // the ops of known outcome, in invoke order
	placed []bool
	byRet  []int // indexes into known, in order of completion
	next   int   // the first of byRet not yet placed
	lo     int   // the first of known not yet placed
	grants []*lockOp
	used   []bool
	folds  map[int]fold // by process: its release or renewal of unknown outcome
	left   map[int]int  // by process: its ops of known outcome not yet placed
	renews map[int]int  // by process: its renewals of known outcome not yet placed
	seen   map[string][]stamp
	key    []byte
	steps  int
	// stopped is set once ctx has ended: the search then gives up.
	stopped bool
}

// fold is a release or renewal of unknown outcome, as the end it may give
// its process's hold: from its call (a release) or its call plus its
// lease (a renewal), once it has been invoked before the grant that takes
// the lock over returned.
type fold struct {
	invoke int64
	end    int64
}

// stamp is what a remembered state adds to its key: its expiry and instant.
type stamp struct{ expiry, now int64 }

// decideOrder reports whether the ops of p can be ordered from p's start;
// undecided is set when ctx ended first.
func decideOrder(ctx context.Context, p piece, ops []*lockOp) (ok, undecided bool) {
	if ctx.Err() != nil {
		return false, true
	}
	start := p.start()
	x := newOrderSearch(ctx, ops, start.holder)
	if x.dfs(start) {
		return true, false
	}
	return false, x.stopped
}

// newOrderSearch sorts ops (in invoke order) into the ops of known
// outcome, the acquires of unknown outcome that may matter and the folds;
// holder is the process holding the lock at the start (-1: none).
func newOrderSearch(ctx context.Context, ops []*lockOp, holder int) *orderSearch {
	x := &orderSearch{ctx: ctx, folds: map[int]fold{}, left: map[int]int{}, renews: map[int]int{}, seen: map[string][]stamp{}}
	for _, o := range ops {
		switch {
		case !o.isOpen():
			x.known = append(x.known, o)
			x.left[o.proc]++
			if o.kind == kindRenew {
				x.renews[o.proc]++
			}
		case o.kind == kindRelease:
			x.folds[o.proc] = fold{invoke: int64(o.invoke), end: o.call}
		case o.kind == kindRenew && o.lease >= 0:
			x.folds[o.proc] = fold{invoke: int64(o.invoke), end: satAdd(o.call, o.lease)}
		}
	}
	x.grants = unknownGrantsThatMatter(ops, holder)
	x.placed, x.used = make([]bool, len(x.known)), make([]bool, len(x.grants))
	x.byRet = make([]int, len(x.known))
	for i := range x.byRet {
		x.byRet[i] = i
	}
	slices.SortFunc(x.byRet, func(a, b int) int { return int(x.known[a].retIdx - x.known[b].retIdx) })
	return x
}

// unknownGrantsThatMatter returns the acquires of unknown outcome among ops
// (in invoke order) that may make another op possible by taking effect:
// those of a process that may hold the lock when it invokes it (a
// re-acquisition may shorten its lease), and those invoked before some
// renewal of known outcome returned (taking the lock over from the
// renewal's process, it makes the renewal change nothing). Any other only
// adds a holder (docs/history.md §4.1, "Acquires of unknown outcome").
// holder is the process holding the lock at the start (-1: none).
func unknownGrantsThatMatter(ops []*lockOp, holder int) []*lockOp {
	// a renewal of unknown outcome is folded, and only ever lowers an
	// expiry: voiding it helps nobody
	idle := idleUnknownGrants(ops, holder, func(r *lockOp) bool { return !r.isOpen() })
	var out []*lockOp
	for i, o := range ops {
		if o.kind == kindGrant && o.isOpen() && !idle[i] {
			out = append(out, o)
		}
	}
	return out
}

// dfs reports whether the ops not yet placed can follow state s.
func (x *orderSearch) dfs(s lockState) bool {
	if x.next == len(x.byRet) {
		return true
	}
	if x.steps++; x.steps&1023 == 0 && x.ctx.Err() != nil {
		x.stopped = true
	}
	if x.stopped || !x.remember(s) {
		return false
	}
	m := x.known[x.byRet[x.next]].retIdx // no op invoked after it can come next
	for i := x.lo; i < len(x.known) && int64(x.known[i].invoke) < m; i++ {
		if x.placed[i] {
			continue
		}
		ok, n := x.apply(s, x.known[i])
		if !ok {
			continue
		}
		next, lo := x.place(i)
		if x.dfs(n) {
			return true
		}
		x.unplace(i, next, lo)
		if x.stopped {
			return false
		}
	}
	return x.tryGrants(s, m)
}

// tryGrants places, in turn, each acquire of unknown outcome invoked
// before m that takes effect from s where that can help: taking the lock
// over from a holder with a renewal still to place, or re-acquiring in a
// way that may end the hold earlier.
func (x *orderSearch) tryGrants(s lockState, m int64) bool {
	if s.holder < 0 {
		return false
	}
	var tried []grantLike
	for i, g := range x.grants {
		if int64(g.invoke) >= m {
			break
		}
		if x.used[i] || (g.proc != s.holder && x.renews[s.holder] == 0) {
			continue
		}
		if g.proc != s.holder {
			// Two acquires of other processes alike in all but their
			// process, both free to come next, lead to states alike in
			// all but the holder, a process with no op left: the first
			// one tried stands for both.
			like := likeOf(g)
			if slices.Contains(tried, like) {
				continue
			}
			tried = append(tried, like)
		}
		ok, n := x.apply(s, g)
		if !ok || n.holder != g.proc || (g.proc == s.holder && !shortens(s, n)) {
			continue
		}
		x.used[i] = true
		if x.dfs(n) {
			return true
		}
		x.used[i] = false
		if x.stopped {
			return false
		}
	}
	return false
}

// grantLike is what an acquire of unknown outcome brings to the states
// after it, but its process (which has no op left) and its invoke (every
// later state may place it, once it may come next).
type grantLike struct {
	call, lease, freed, freedIdx int64
	session, fromCall            bool
}

func likeOf(g *lockOp) grantLike {
	return grantLike{call: g.call, lease: g.lease, freed: g.freed, freedIdx: g.freedIdx, session: g.session, fromCall: g.fromCall}
}

// shortens reports whether a re-acquisition that took s to n may end its
// process's hold earlier: an earlier expiry, or a session lock, which its
// client's close ends, where the lock was not one.
func shortens(s, n lockState) bool {
	return n.expiry < s.expiry || n.by.session && !s.by.session
}

// apply steps o from s, with the fold of the holder's process when o is a
// grant that would take the lock over and every op of known outcome of
// that process has been placed.
func (x *orderSearch) apply(s lockState, o *lockOp) (bool, lockState) {
	end := open
	if o.kind == kindGrant && s.holder >= 0 && s.holder != o.proc && x.left[s.holder] == 0 {
		if f, ok := x.folds[s.holder]; ok && f.invoke < o.retIdx {
			end = f.end
		}
	}
	ok, n, _ := stepUntil(s, o, end)
	return ok, n
}

// place marks known[i] placed and returns next and lo as they were.
func (x *orderSearch) place(i int) (next, lo int) {
	next, lo = x.next, x.lo
	x.placed[i] = true
	x.left[x.known[i].proc]--
	if x.known[i].kind == kindRenew {
		x.renews[x.known[i].proc]--
	}
	for x.next < len(x.byRet) && x.placed[x.byRet[x.next]] {
		x.next++
	}
	for x.lo < len(x.known) && x.placed[x.lo] {
		x.lo++
	}
	return next, lo
}

// unplace undoes place(i), which returned next and lo.
func (x *orderSearch) unplace(i, next, lo int) {
	x.placed[i], x.next, x.lo = false, next, lo
	x.left[x.known[i].proc]++
	if x.known[i].kind == kindRenew {
		x.renews[x.known[i].proc]++
	}
}

// remember records s with the ops placed so far, and reports false when a
// state it dominates was already explored from the same ops: the same
// known ops and acquires of unknown outcome placed, the same holder and
// grant, an expiry and an instant no later.
func (x *orderSearch) remember(s lockState) bool {
	k := binary.AppendUvarint(x.key[:0], uint64(x.lo))
	m := x.known[x.byRet[x.next]].retIdx
	for i := x.lo; i < len(x.known) && int64(x.known[i].invoke) < m; i++ {
		if x.placed[i] {
			k = binary.AppendUvarint(k, uint64(i-x.lo))
		}
	}
	k = append(k, 0xff)
	for i, u := range x.used {
		if u {
			k = binary.AppendUvarint(k, uint64(i))
		}
	}
	k = append(k, 0xff)
	k = binary.AppendVarint(k, int64(s.holder))
	if s.by != nil {
		k = binary.AppendUvarint(k, uint64(s.by.invoke))
	}
	x.key = k
	st := stamp{expiry: s.expiry, now: s.now}
	old := x.seen[string(k)]
	for _, o := range old {
		if o.expiry <= st.expiry && o.now <= st.now {
			return false
		}
	}
	old = slices.DeleteFunc(old, func(o stamp) bool { return st.expiry <= o.expiry && st.now <= o.now })
	x.seen[string(k)] = append(old, st)
	return true
}
