package checker

import (
	"math"
	"slices"
)

// cutKey appends the pieces of one key's ops (in invoke order) to pieces.
//
// A key is cut at two kinds of points (docs/history.md §4.1). At a
// quiescent point the lock is free: every earlier op has returned before
// the invoke there (an op of unknown outcome counts as returned at its
// process's crash, and never when its process did not crash), and every
// process that may still hold the lock has crashed before it and, unless
// its lock is a session lock, has a lease that may have expired by then.
// An unknown release may always take effect at once, and the free lock it
// leaves is the most permissive state, so it ends its process's hold for
// the purpose of cutting; an unknown grant or renewal makes no holder. At
// a held point one known holder holds the lock in every order (cutHeld),
// and the piece after it starts from that hold.
func cutKey(pieces []piece, key string, all []*lockOp) []piece {
	k := newKeyCutter(key, func(p piece) { pieces = append(pieces, p) })
	for _, o := range all {
		k.add(o)
	}
	k.flush()
	return pieces
}

// keyCutter is cutKey fed one op at a time: it takes one key's lock ops in
// invoke order, each once it and every op of the key invoked before it
// has completed (or the history has ended), and hands each piece to emit
// as soon as the next op's invoke cuts it off, so that only the open piece
// is held.
type keyCutter struct {
	key     string
	emit    func(piece)
	cur     []*lockOp
	held    *lockState // the state the open piece starts from; nil: free
	maxEnd  int64      // the latest return index so far
	seq     bool
	holders map[int]cutHold
	// spans are the ops of the open piece that may still be outstanding
	// at the next invoke: those of unknown outcome, and those that had not
	// returned at the last invoke.
	spans []*lockOp
	// renewRet is the latest return of a renewal of known outcome in the
	// open piece.
	renewRet int64
	// chain counts the quiescent points so far, link the held points since
	// the last (piece.chain, piece.link).
	chain, link int
	// granted are the processes with a grant since the last quiescent
	// point not followed by their own release (ok): each may hold the lock
	// when it invokes its next op, in some order.
	granted map[int]bool
}

// cutHold is a process that may hold the lock, for cutting.
type cutHold struct {
	grant *lockOp
	bound int64 // the latest time its lease may end, in any linearization
	// low is the earliest its hold may end by its lease, since its grant:
	// the earliest of the grant's call plus lease and its renewals' call
	// plus lease' (open when none ends).
	low int64
	// exact is the expiry in force after its latest grant and renewals when
	// every order agrees on it (a lease counted from the call, a renewal's,
	// or never), and inexact is set when it depends on the order (a lease
	// counted from the grant's instant, with no renewal since).
	exact   int64
	inexact bool
}

func newKeyCutter(key string, emit func(piece)) *keyCutter {
	return &keyCutter{key: key, emit: emit, maxEnd: math.MinInt64, seq: true, holders: map[int]cutHold{}, renewRet: -1, granted: map[int]bool{}}
}

// flush emits the open piece, if any, and starts an empty one from a free
// lock.
func (k *keyCutter) flush() {
	if len(k.cur) > 0 {
		k.emit(piece{key: k.key, ops: k.cur, seq: k.seq, held: k.held, chain: k.chain, link: k.link})
		k.chain, k.link = k.chain+1, 0
	}
	k.cur, k.seq, k.held, k.spans, k.renewRet, k.maxEnd = nil, true, nil, nil, -1, math.MinInt64
	clear(k.holders)
	clear(k.granted)
}

// add cuts before o when o's invoke is a quiescent or a held point, then
// adds o to the open piece.
func (k *keyCutter) add(o *lockOp) {
	at := int64(o.invoke)
	if len(k.cur) > 0 {
		if k.maxEnd < at && k.quiet(o) {
			k.flush()
		} else {
			k.cutHeld(o)
		}
	}
	if len(k.cur) > 0 && k.maxEnd >= at {
		k.seq = false
	}
	o.heldBefore = k.granted[o.proc]
	switch {
	case o.isOpen():
	case o.kind == kindGrant:
		k.granted[o.proc] = true
	case o.kind == kindRelease:
		delete(k.granted, o.proc)
	}
	k.cur = append(k.cur, o)
	k.spans = append(k.spans, o)
	o.sync()
	end := o.retIdx
	if o.isOpen() {
		k.seq = false
		end = o.crashIdx
	}
	k.maxEnd = max(k.maxEnd, end)
	if o.kind == kindRenew && !o.isOpen() {
		k.renewRet = max(k.renewRet, o.ret)
	}
	k.track(o)
}

// quiet reports whether no process may still hold the lock at o's invoke
// (the ops before it having all returned).
func (k *keyCutter) quiet(o *lockOp) bool {
	at := int64(o.invoke)
	for _, hd := range k.holders {
		g := hd.grant
		g.sync()
		if g.crashIdx >= at || (g.session && g.freedIdx >= at) || (!g.session && hd.bound > o.call) {
			return false
		}
	}
	return true
}

// track updates the processes that may hold the lock after o.
func (k *keyCutter) track(o *lockOp) {
	if o.isOpen() && o.kind != kindRelease {
		return
	}
	switch o.kind {
	case kindRelease:
		delete(k.holders, o.proc)
		return
	case kindRenew:
		// A renewal that took effect set the expiry from its own call.
		if hd, ok := k.holders[o.proc]; ok {
			hd.bound = leaseFloor(o, o.call)
			hd.exact, hd.inexact, hd.low = hd.bound, false, min(hd.low, hd.bound)
			k.holders[o.proc] = hd
		}
		return
	}
	// Whatever the model counts a lease from (the call, the release
	// before it, the hold it took over) lies before the acquire
	// returned, so ret + lease bounds its expiry in every linearization.
	bound := open
	if o.lease >= 0 {
		bound = satAdd(o.ret, o.lease)
	}
	// A grant invoked after another one returned is linearized after it
	// in every linearization, so that other holder has lost the lock.
	at := int64(o.invoke)
	for p, hd := range k.holders {
		if p != o.proc && hd.grant.retIdx < at {
			delete(k.holders, p)
		}
	}
	low := leaseFloor(o, o.call)
	k.holders[o.proc] = cutHold{grant: o, bound: bound, low: low, exact: low, inexact: o.lease >= 0 && !o.fromCall}
}

// cutHeld cuts before o, and reports so, where one known holder h holds
// the lock in every order of the ops (docs/history.md §4.1, "Cuts where
// the lock is held"):
//   - h's latest grant g returned before o's invoke, every other process
//     that may hold the lock holds it by a grant that had not returned
//     then, and h has neither crashed nor had its client closed before it;
//   - no order lets h's hold end by o's call: its lease (from g's call)
//     and each renewal's since could end no earlier than after it;
//   - every order agrees on the expiry in force then;
//   - each op still outstanding at o's invoke (carried) is an acquire of
//     another process, or a release or renewal of unknown outcome of
//     another process, which stays before the cut (the hold it may end
//     came before g's).
//
// The piece before the cut then ends with h holding the lock by g, and
// every op after it takes effect at or after o's call, so the piece after
// starts from h's hold at o's call, with the acquires carried over.
func (k *keyCutter) cutHeld(o *lockOp) bool {
	at := int64(o.invoke)
	h, ok := k.soleHolder(o)
	if !ok {
		return false
	}
	carry, ok := k.carried(at, h.grant)
	if !ok {
		return false
	}
	if len(carry) == len(k.cur) {
		return false // nothing to cut off
	}
	a := make([]*lockOp, 0, len(k.cur)-len(carry))
	for _, x := range k.cur {
		if !slices.Contains(carry, x) {
			a = append(a, x)
		}
	}
	// The hold goes on past the cut: a copy of its grant keeps learning of
	// its process's crash and client close, which the stream fixes in the
	// ops of a piece when it emits it.
	g := new(lockOp)
	*g = *h.grant
	h.grant = g
	k.holders[g.proc] = h
	k.emit(piece{key: k.key, ops: a, seq: sequential(a), held: k.held, chain: k.chain, link: k.link})
	k.link++
	k.held = &lockState{holder: g.proc, by: g, expiry: h.exact, now: o.call}
	k.cur, k.spans, k.renewRet = carry, slices.Clone(carry), -1
	// maxEnd and holders stay as they are: the quiescent points are those
	// of the key's ops since the last one, whichever piece they went to.
	k.seq = len(carry) == 0
	return true
}

// soleHolder returns the one process that may hold the lock at o's invoke
// by a grant that returned before it, when the lock cannot have left it
// by then and its expiry is the same in every order.
func (k *keyCutter) soleHolder(o *lockOp) (cutHold, bool) {
	at := int64(o.invoke)
	var h cutHold
	found := false
	for _, hd := range k.holders {
		if hd.grant.retIdx > at {
			continue // not returned: carried over, or no cut (carried)
		}
		if found {
			return h, false
		}
		h, found = hd, true
	}
	if !found {
		return h, false
	}
	g := h.grant
	g.sync()
	if g.crashIdx < at || g.freedIdx < at || h.inexact || h.low <= o.call {
		return h, false
	}
	return h, true
}

// carried returns the ops outstanding at history index at that go to the
// piece after a cut there, where g's process holds the lock: the acquires
// of other processes that held nothing when they invoked them, invoked
// after every renewal of the open piece returned, and, when granted, with
// a lease that could not end by g's return (so that they come after g's
// hold in every order). ok is false when some outstanding op is none of
// those nor a release or renewal of unknown outcome of another process.
func (k *keyCutter) carried(at int64, g *lockOp) (carry []*lockOp, ok bool) {
	k.spans = slices.DeleteFunc(k.spans, func(x *lockOp) bool { return !x.isOpen() && x.retIdx < at })
	for _, x := range k.spans {
		switch {
		case x.proc == g.proc:
			return nil, false
		case x.kind != kindGrant && x.isOpen():
			continue // it stays before the cut
		case x.kind != kindGrant:
			return nil, false
		case x.heldBefore || k.renewRet >= x.call:
			return nil, false
		case !x.isOpen() && leaseFloor(x, x.call) <= g.ret:
			return nil, false
		}
		carry = append(carry, x)
	}
	return carry, true
}

// sequential reports whether no two of ops (in invoke order) overlap and
// every one has returned.
func sequential(ops []*lockOp) bool {
	end := int64(math.MinInt64)
	for _, o := range ops {
		if o.isOpen() || int64(o.invoke) <= end {
			return false
		}
		end = max(end, o.retIdx)
	}
	return true
}
