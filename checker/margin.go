package checker

import (
	"math"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// This file measures how close a history came to a violation
// (docs/history.md §4.8): per key, the smallest safety margin of the lease
// order, of the holders' writes and of the fencing tokens. A margin is no
// verdict: it says how far a run was from one.

// Margin is how close one key of a history came to a violation, by the
// checkers' own definitions (docs/history.md §4.8). A margin that does not
// apply to the key (no grant whose lease ended its hold before another's,
// no write by a holder with an until or a lease-lost, no grant of a token
// after an accepted write with a token) is nil.
type Margin struct {
	Key string `json:"key"`
	// Lease is the smallest gap between a grant's return and the end of
	// an older grant's hold of another process: negative when the
	// linearizability check reports an early-grant of the key.
	Lease *TimeMargin `json:"lease,omitempty"`
	// Write is the smallest gap between a holder's deadline (its until,
	// or the lease-lost that ended its belief) and the last write it made
	// with its grant: negative when the write took effect after it.
	Write *TimeMargin `json:"write,omitempty"`
	// Token is the smallest gap between a token granted and the highest
	// token of an accepted write before it: at most zero when the
	// fencing-token check reports a token-reuse or token-regression.
	Token *TokenMargin `json:"token,omitempty"`
}

// TimeMargin is a margin in time and the ops that realise it.
type TimeMargin struct {
	Margin time.Duration `json:"margin_ns"`
	// Lease is the length of the lease the margin is measured against
	// (the one whose end it is), so that margins of keys and runs with
	// other leases compare (Normalized); zero when that lease never ends.
	Lease time.Duration `json:"lease_ns,omitempty"`
	// Ops are the op indexes that realise it (docs/history.md §4.8).
	Ops []int `json:"ops"`
}

// TokenMargin is a margin in tokens and the ops that realise it: the
// accepted write's ok and the grant's ok.
type TokenMargin struct {
	Margin int64 `json:"margin"`
	Ops    []int `json:"ops"`
}

// MarginNeverEnded is the normalised margin of a time margin of -Forever
// (a hold that could not end, whose overlap has no bound): below every
// other margin, and finite so that a campaign's JSON holds it. It is
// written "-∞".
const MarginNeverEnded = -math.MaxFloat64

// Normalized returns the smallest margin of m in lease lengths: a time
// margin divided by its lease (fallback when it has none; MarginNeverEnded
// for a margin of -Forever), and a token
// margin only when it is at most zero (a violation; it is then the margin
// itself, in tokens), since a positive token margin says nothing about
// time. It reports false when no margin applies or none can be normalised
// (no lease and no fallback).
func (m Margin) Normalized(fallback time.Duration) (float64, bool) {
	best, ok := 0.0, false
	take := func(v float64) {
		if !ok || v < best {
			best, ok = v, true
		}
	}
	for _, t := range []*TimeMargin{m.Lease, m.Write} {
		if t == nil {
			continue
		}
		l := t.Lease
		if l <= 0 {
			l = fallback
		}
		switch {
		case t.Margin == -Forever:
			take(MarginNeverEnded)
		case l > 0:
			take(float64(t.Margin) / float64(l))
		case t.Margin < 0:
			take(-1)
		}
	}
	if m.Token != nil && m.Token.Margin <= 0 {
		take(float64(m.Token.Margin))
	}
	return best, ok
}

// EffectiveDrift is the drift in [0, 1) the checks of o use: Drift, or
// DefaultDrift when it is zero, or none for NoDrift.
func (o Options) EffectiveDrift() float64 { return o.drift() }

// Margins returns the margins of every key granted in h, which must be
// well-formed, in the order of their keys, under drift d in [0, 1)
// (Options.EffectiveDrift). It feeds h op by op to the streaming
// computation, each op followed by the Follower's events of it, which
// holds only what is open (docs/history.md §6).
func Margins(h history.History, d float64) []Margin {
	s := newMarginStream(d)
	f := NewFollower()
	var evs []HoldEvent
	for i := range h {
		s.add(&h[i])
		evs = f.Add(&h[i], evs[:0])
		for j := range evs {
			s.hold(&evs[j])
		}
	}
	evs = f.End(evs[:0])
	for j := range evs {
		s.hold(&evs[j])
	}
	return s.result()
}

// marginStream computes the margins of a well-formed history fed to it op
// by op, in order (add), each op followed by the Follower's events of it
// (hold), once the history has ended (result). Who held which lock when
// (grants, beliefs and their untils, crashes and client closes) it reads
// from the Follower's events; what it keeps is its own: for each worker
// process its outstanding invoke, its latest grant of each key with the
// bound of its hold and its last write, and the pairs that wait for that
// invoke's outcome; for each key the latest grant of each process not yet
// paired with a newer grant, the highest token an accepted write carried,
// and the smallest margins so far.
type marginStream struct {
	d     float64
	n     int // the index of the next op
	procs procTable[marginProc]
	keys  map[string]*marginKey
	// closing are, by process, the latest grants not yet paired of the
	// processes that crashed, until the Follower says their client closed
	// (§1).
	closing map[int][]*marginGrant
}

// marginProc is what marginStream keeps of one worker process.
type marginProc struct {
	pending bool
	inv     marginInvoke
	grants  []*marginGrant // its latest grant of each key it was granted
	// deferred are the pairs whose older grant is this process's and whose
	// hold end waits for the outcome of its outstanding lock op.
	deferred []marginPair
}

// marginInvoke is a process's outstanding invoke, copied.
type marginInvoke struct {
	index int
	f     string
	key   string
	at    time.Duration
	ttl   time.Duration
	token uint64
	// best is the highest token of an accepted write of the key whose ok
	// came before this invoke (an acquire's or a renewal's).
	best    tokenWrite
	hasBest bool
	// grant is a write's lease: its process's latest grant of the key.
	grant *marginGrant
}

// tokenWrite is an accepted write with a token: its token and its ok.
type tokenWrite struct {
	token uint64
	ok    int
}

// marginPair is a grant b (its return and its ok) newer than grant a of
// another process.
type marginPair struct {
	a    *marginGrant
	bRet time.Duration
	bOK  int
}

// marginKey is what marginStream keeps of one key.
type marginKey struct {
	open    []*marginGrant // the latest grant of each process, not yet paired
	best    tokenWrite     // the highest token of an accepted write
	hasBest bool
	lease   *TimeMargin
	leaseAt [2]int // the lease margin's newer and older grant's oks, for ties
	write   *TimeMargin
	writeAt int // the write margin's grant's ok, for ties
	token   *TokenMargin
}

// marginGrant is one grant as the margins read it.
type marginGrant struct {
	key        string
	proc       int
	invoke, ok int
	call, ret  time.Duration
	lease      time.Duration // the grant's lease (history.NoLease: never ends)
	token      uint64        // the token it holds (its own or a renewal's)
	// hold bounds the end of its hold (docs/history.md §4.8), as far as
	// the ops of its process seen so far go; closeOp and closeAt are when
	// its client was closed (-1: not yet).
	hold    holdBound
	paired  bool // paired with its successor
	closeOp int
	closeAt time.Duration
	// Its belief (§3): open until it ends at end by reason (endOp the op
	// that ended it, -1 for its until), and the until in force.
	open   bool
	until  time.Duration
	end    time.Duration
	endOp  int
	reason EndReason
	// The write of its process with the latest moment (lastAt: applied
	// where exact, else its invoke) made with it that may have taken
	// effect.
	lastAt    time.Duration
	lastOp    int
	hasWrite  bool
	leaseNow  time.Duration // the lease in force: its latest renewal's, else its own
	finalized bool
}

// newMarginStream returns the margins of a history under drift d, before
// its first op.
func newMarginStream(d float64) *marginStream {
	return &marginStream{d: d, keys: map[string]*marginKey{}, closing: map[int][]*marginGrant{}}
}

// key returns what the stream keeps of key k, made on first use.
func (s *marginStream) key(k string) *marginKey {
	mk := s.keys[k]
	if mk == nil {
		mk = &marginKey{}
		s.keys[k] = mk
	}
	return mk
}

// grantOf returns p's latest grant of key k, nil when it has none.
func (p *marginProc) grantOf(k string) *marginGrant {
	for _, g := range p.grants {
		if g.key == k {
			return g
		}
	}
	return nil
}

// isLockOp reports whether f is an op of the lease model (§4.1).
func isLockOp(f string) bool {
	return f == history.FAcquire || f == history.FRelease || f == history.FRenew
}

// add feeds the history's next op.
func (s *marginStream) add(op *history.Op) {
	i := s.n
	s.n++
	if op.IsNemesis() {
		return
	}
	p := s.procs.get(op.Process)
	if p == nil {
		p = &marginProc{}
		s.procs.set(op.Process, p)
	}
	if op.Type == history.Invoke {
		s.invoke(p, op, i)
		return
	}
	if !p.pending {
		return // not well-formed; Validate says so
	}
	p.pending = false
	inv := p.inv
	if isLockOp(inv.f) {
		s.lockDone(p, &inv, op)
	}
	if op.F == history.FWrite && op.Type != history.Fail {
		s.wrote(&inv, op, i)
	}
}

// hold feeds the Follower's next event, after the op whose feeding made
// it.
func (s *marginStream) hold(e *HoldEvent) {
	p := s.procs.get(e.Process)
	if p == nil {
		if e.Kind == HoldClosed {
			s.closed(e)
		}
		return
	}
	switch e.Kind {
	case HoldGranted:
		s.grant(p, e)
	case HoldRenewed:
		s.renew(p, e)
	case HoldUntil:
		if g := p.grantOf(e.Key); g != nil {
			g.until = e.Until
		}
	case HoldEnded:
		if g := p.grantOf(e.Key); g != nil {
			g.open = false
			g.end, g.endOp, g.reason, g.until = e.Time, e.EndOp(), e.Reason, e.Until
		}
	case HoldCrashed:
		s.crash(p, e)
	case HoldClosed:
		s.closed(e)
	}
}

// invoke takes the invoke op (at index i) of process p.
func (s *marginStream) invoke(p *marginProc, op *history.Op, i int) {
	p.pending = true
	p.inv = marginInvoke{index: i, f: op.F, key: op.Key, at: op.Time, ttl: op.TTL, token: op.Token}
	switch op.F {
	case history.FAcquire, history.FRenew:
		if mk := s.keys[op.Key]; mk != nil && mk.hasBest {
			p.inv.best, p.inv.hasBest = mk.best, true
		}
	case history.FWrite:
		p.inv.grant = p.grantOf(op.Key)
	}
}

// holdBound is the end of a grant's hold as its successor's lease margin
// reads it (docs/history.md §4.8): floor, the end of the lease in force
// (floorOp the invoke whose call it counts from, floorLen its length), and
// release, the call of its process's first release after it (releaseOp;
// Forever: none), after which nothing counts (released); session says
// whether the grant or a re-acquisition after it is a session lock.
type holdBound struct {
	floor     time.Duration
	floorOp   int
	floorLen  time.Duration
	release   time.Duration
	releaseOp int
	session   bool
	released  bool
}

// laterOp is a lock op of a grant's process on its key, after the grant,
// that did not fail: its kind, invoke and call, the lease it may set and
// whether it is a session lock, and for one that succeeded, its return.
type laterOp struct {
	f       string
	index   int
	call    time.Duration
	lease   time.Duration
	session bool
	ok      bool
	ret     time.Duration
}

// step walks hb through x under drift d. A renewal that succeeded and
// returned before the floor took effect while the process held the lock
// and sets the lease anew, when settled (it returned before the newer
// grant the margin is measured for); any other renewal or re-acquisition
// may set a shorter lease, and a release ends the walk.
func (hb *holdBound) step(x laterOp, d float64, settled bool) {
	if hb.released {
		return
	}
	e := leaseEnd(x.call, x.lease, d)
	switch {
	case x.f == history.FRelease:
		hb.release, hb.releaseOp, hb.released = x.call, x.index, true
	case x.f == history.FRenew && settled && x.ok && x.ret < hb.floor:
		hb.floor, hb.floorOp, hb.floorLen = e, x.index, x.lease
	case e < hb.floor:
		hb.floor, hb.floorOp, hb.floorLen = e, x.index, x.lease
	}
	hb.session = hb.session || x.session
}

// lockDone takes the completion done (the zero op for one pending at the
// end) of p's lock op inv: the pairs that waited for its outcome are
// measured, with the op as one that returned after their newer grant, and
// p's latest grant of the key walks through it (§3, lease order).
func (s *marginStream) lockDone(p *marginProc, inv *marginInvoke, done *history.Op) {
	g := p.grantOf(inv.key)
	var x *laterOp
	if g != nil && done.Type != history.Fail {
		x = &laterOp{f: inv.f, index: inv.index, call: inv.at, ok: done.Type == history.OK, ret: done.Time}
		var ok history.Op // an op of unknown outcome has no ok to read its lease from
		if x.ok {
			ok = *done
		}
		switch inv.f {
		case history.FRenew:
			x.lease = renewLease(&history.Op{TTL: inv.ttl}, &ok, g.lease)
		case history.FAcquire:
			x.lease, x.session = grantLease(&history.Op{TTL: inv.ttl}, &ok)
		}
	}
	for _, pr := range p.deferred {
		hb := pr.a.hold
		if x != nil {
			hb.step(*x, s.d, false)
		}
		s.pair(pr, hb)
	}
	p.deferred = p.deferred[:0]
	if x != nil {
		g.hold.step(*x, s.d, true)
	}
}

// grant takes the Follower's HoldGranted e of process p (whose belief of
// the key, if any, the Follower ended before): it starts the grant's
// belief, pairs it with the older grants of other processes (lease margin)
// and measures its token (token margin), against the highest accepted
// token before its invoke, p.inv.
func (s *marginStream) grant(p *marginProc, e *HoldEvent) {
	mk := s.key(e.Key)
	old := p.grantOf(e.Key)
	if old != nil {
		s.finishWrite(old)
	}
	g := &marginGrant{key: e.Key, proc: e.Process, invoke: e.Invoke, ok: e.OK(), call: e.Call, ret: e.Time,
		lease: e.Lease, token: e.Token, closeOp: -1,
		hold: holdBound{floor: leaseEnd(e.Call, e.Lease, s.d), floorOp: e.Invoke, floorLen: e.Lease, release: Forever, releaseOp: -1, session: e.Session},
		open: true, until: e.Until, end: Forever, endOp: -1, reason: EndOpen, leaseNow: e.Lease}
	kept := mk.open[:0]
	for _, a := range mk.open {
		switch {
		case a.proc == e.Process: // g is its process's latest grant now
		case a.ok < g.invoke || a.ret < leaseEnd(g.call, g.lease, s.d): // a is older (§3)
			a.paired = true
			s.pairOrDefer(a, g)
		default:
			kept = append(kept, a)
		}
	}
	mk.open = append(kept, g)
	if old != nil {
		p.grants[slices.Index(p.grants, old)] = g
	} else {
		p.grants = append(p.grants, g)
	}
	if e.Token != 0 && p.inv.hasBest {
		mk.tokenMargin(p.inv.best, e.Token, e.OK())
	}
}

// pairOrDefer evaluates the pair of a and the newer grant b, or, when a's
// process has a lock op of the key outstanding (whose outcome says whether
// it may end a's hold earlier), leaves it until that op completes.
func (s *marginStream) pairOrDefer(a, b *marginGrant) {
	pr := marginPair{a: a, bRet: b.ret, bOK: b.ok}
	if pa := s.procs.get(a.proc); pa != nil && pa.pending && isLockOp(pa.inv.f) && pa.inv.key == a.key && !a.hold.released {
		pa.deferred = append(pa.deferred, pr)
		return
	}
	s.pair(pr, a.hold)
}

// pair measures the lease margin of grant a and its successor, which
// returned at bRet (its ok at bOK), with hb the bound of a's hold under the
// ops of a's process invoked before bOK: bRet minus the end of a's hold,
// when that is negative (no order of the lease model grants it after a's
// hold) or a lease ended the hold; a hold that a release or the close of
// a's client ended before bRet is a hand-over, not counted.
func (s *marginStream) pair(pr marginPair, hb holdBound) {
	a := pr.a
	le, xe, setter := hb.floor, hb.release, hb.floorOp
	xeOp := hb.releaseOp
	if hb.session && a.closeOp >= 0 && a.closeOp < pr.bOK && a.closeAt < xe {
		xe, xeOp = a.closeAt, a.closeOp
	}
	var m time.Duration
	switch {
	case pr.bRet < min(le, xe):
		end := le
		if xe < le {
			end, setter = xe, xeOp
		}
		m = pr.bRet - end
		if end == Forever {
			m = -Forever // a's hold could not end at all
		}
	case le <= xe:
		m = pr.bRet - le
	default:
		return
	}
	mk := s.keys[a.key]
	at := [2]int{pr.bOK, a.ok}
	if mk.lease != nil && (m > mk.lease.Margin || m == mk.lease.Margin && cmpPair(at, mk.leaseAt) >= 0) {
		return
	}
	ops := []int{a.invoke, a.ok}
	if setter >= 0 && setter != a.invoke {
		ops = append(ops, setter)
	}
	mk.lease, mk.leaseAt = &TimeMargin{Margin: m, Lease: max(hb.floorLen, 0), Ops: append(ops, pr.bOK)}, at
}

// cmpPair orders pairs by their newer grant's ok, then the older's.
func cmpPair(x, y [2]int) int {
	if x[0] != y[0] {
		return x[0] - y[0]
	}
	return x[1] - y[1]
}

// tokenMargin takes a grant of token (its ok at index i) whose invoke came
// after the accepted write best.
func (mk *marginKey) tokenMargin(best tokenWrite, token uint64, i int) {
	m := int64(token - best.token)
	if mk.token == nil || m < mk.token.Margin {
		mk.token = &TokenMargin{Margin: m, Ops: []int{best.ok, i}}
	}
}

// renew takes the Follower's HoldRenewed e of process p: it belongs to
// p's latest grant of the key, whose lease in force and token it may move
// (the Follower moves its until, HoldUntil).
func (s *marginStream) renew(p *marginProc, e *HoldEvent) {
	g := p.grantOf(e.Key)
	if g == nil {
		return
	}
	g.leaseNow = e.Lease
	if e.Token != 0 && e.Token != g.token {
		g.token = e.Token
		if p.inv.hasBest {
			s.key(e.Key).tokenMargin(p.inv.best, e.Token, e.OK())
		}
	}
}

// wrote takes the completion done (at index i; the zero op for a write
// pending at the end) of a write that may have taken effect: an accepted
// write with a token may raise its key's highest, and the write is its
// lease's latest when it came no earlier than the others.
func (s *marginStream) wrote(inv *marginInvoke, done *history.Op, i int) {
	at := inv.at
	if done.Type == history.OK {
		token := inv.token
		if done.Token != 0 {
			token = done.Token
		}
		if mk := s.key(inv.key); token != 0 && (!mk.hasBest || token > mk.best.token) {
			mk.best, mk.hasBest = tokenWrite{token: token, ok: i}, true
		}
		if done.Applied != 0 {
			at = done.Applied
		}
	}
	if g := inv.grant; g != nil && (!g.hasWrite || at >= g.lastAt) {
		g.lastAt, g.lastOp, g.hasWrite = at, inv.index, true
	}
}

// crash takes the Follower's HoldCrashed e of process p, after the ends
// of its beliefs: its grants' writes are all known, and its grants not yet
// paired wait for the close of its client (closed).
func (s *marginStream) crash(p *marginProc, e *HoldEvent) {
	for _, g := range p.grants {
		s.finishWrite(g)
	}
	// only a grant not yet paired needs its close
	if waiting := slices.DeleteFunc(p.grants, func(g *marginGrant) bool { return g.paired }); len(waiting) > 0 {
		s.closing[e.Process] = waiting
	}
	s.procs.set(e.Process, nil) // it issues nothing more
}

// closed takes the Follower's HoldClosed e: the client of its crashed
// process closed, at e's crash.
func (s *marginStream) closed(e *HoldEvent) {
	for _, g := range s.closing[e.Process] {
		g.closeOp, g.closeAt = e.Index, e.Time
	}
	delete(s.closing, e.Process)
}

// finishWrite measures the write margin of grant g, whose writes are all
// known: its holder's deadline (the end of its belief when a lease-lost
// ended it, else its until, as a belief ends at it) minus its last write's
// moment.
func (s *marginStream) finishWrite(g *marginGrant) {
	if g.finalized {
		return
	}
	g.finalized = true
	deadline := max(g.until, g.ret)
	switch {
	case !g.hasWrite:
		return
	case g.reason == EndLeaseLost:
		deadline = g.end
	case g.until == 0:
		return
	}
	m := deadline - g.lastAt
	mk := s.keys[g.key]
	if mk.write != nil && (m > mk.write.Margin || m == mk.write.Margin && g.ok >= mk.writeAt) {
		return
	}
	ops := []int{g.ok, g.lastOp}
	if g.reason == EndLeaseLost {
		ops = append(ops, g.endOp)
	}
	mk.write, mk.writeAt = &TimeMargin{Margin: m, Lease: max(g.leaseNow, 0), Ops: ops}, g.ok
}

// result ends the history, where an op still pending is of unknown
// outcome and a belief still open runs to its until, and returns the
// margins of every key granted or written, in the order of their keys.
func (s *marginStream) result() []Margin {
	s.procs.each(func(_ int, p *marginProc) {
		if !p.pending {
			return
		}
		p.pending = false
		var none history.Op
		switch {
		case isLockOp(p.inv.f):
			s.lockDone(p, &p.inv, &none)
		case p.inv.f == history.FWrite:
			s.wrote(&p.inv, &none, -1)
		}
	})
	s.procs.each(func(_ int, p *marginProc) {
		for _, g := range p.grants {
			s.finishWrite(g)
		}
	})
	keys := make([]string, 0, len(s.keys))
	for k := range s.keys {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]Margin, 0, len(keys))
	for _, k := range keys {
		mk := s.keys[k]
		out = append(out, Margin{Key: k, Lease: mk.lease, Write: mk.write, Token: mk.token})
	}
	return out
}
