// live_grants.go holds the grants as the liveness report reads them: when
// their excuse ends (docs/history.md §4.5, "Excuses"), how renewals, caps
// by later grants and crashes move it, and the longest lease of each key.

package checker

import (
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// liveGrant is one grant as the liveness report reads it: its excuse
// (docs/history.md §4.5, "Excuses"), which is known once its process
// released it, crashed or took its key again (or at the end), and its lease
// (for the longest lease of its key), known once its process crashed or
// took the key again.
type liveGrant struct {
	key                       *liveKey
	num                       int // its number (the Follower's)
	life                      *liveLife
	client                    int
	invoke, okIndex           int
	call, ret                 time.Duration
	lease                     time.Duration
	session                   bool
	okLease                   bool // its ok records `lease`
	renewed                   bool // some renewal ok; renewedCall and renewedLease are the latest's
	renewedCall, renewedLease time.Duration
	released, lost            time.Duration // -1 when none (holdFacts)
	extended                  time.Duration
	unknownRenewalLease       time.Duration
	unknownRenewed            bool
	beliefEnd                 time.Duration // Forever while open or when it never ends
	uncappedKnown             bool          // uncappedAt is known: nothing its process does changes it
	uncappedAt                time.Duration // the latest of its return, hold end and belief end
	capped                    bool          // a grant of the key invoked after its ok returned, at capAt
	capAt                     time.Duration
	settled                   bool // its excuse end is known and taken
	end                       time.Duration
	leaseFinal                bool
	// parts are the parts of [call, ret) outside every down stretch, which
	// alone it excuses before its return (docs/history.md §4.5); nil when
	// that is the whole of it.
	parts []span
}

// uncappedEnd is the latest of g's return, its hold end (§4.5) and the end of
// its belief when that ends: its excuse ends there unless a later grant
// caps it. A crashed holder's session lease is moved on by the down
// stretches downs.
func (g *liveGrant) uncappedEnd(downs []span) time.Duration {
	lease := g.lease
	e := g.ret
	if g.okLease {
		e = g.call
	}
	if g.renewed {
		lease, e = g.renewedLease, g.renewedCall
	}
	if lease < 0 {
		e = Forever
	} else {
		e += lease
	}
	if g.unknownRenewed {
		e = max(e, g.extended)
		if lease >= 0 && (g.unknownRenewalLease < 0 || g.unknownRenewalLease > lease) {
			lease = g.unknownRenewalLease
		}
	}
	c, dead := g.life.at, g.life.crashed
	var end time.Duration
	switch {
	case g.released >= 0:
		end = g.released
	case dead && g.session && lease < 0:
		end = c
	case dead && g.session:
		end = sessionEnd(c+lease, lease, downs)
	case dead && e == Forever:
		end = c
	case dead:
		end = e
	case g.session:
		end = Forever
	default:
		end = e
	}
	if g.lost >= 0 {
		end = min(end, g.lost)
	}
	to := max(g.ret, end)
	if g.beliefEnd != Forever {
		to = max(to, g.beliefEnd)
	}
	return to
}

// contribution is g's lease as the longest lease of its key counts it:
// its latest renewal's, else its own; -1 when it never expires.
func (g *liveGrant) contribution() time.Duration {
	if g.renewed {
		return g.renewedLease
	}
	return g.lease
}

// trySettle takes the excuse end of grant g when it is known: its uncappedAt capped
// by the return of the first grant of the key invoked after its ok, or uncappedAt
// once the history has passed it (a later cap comes no earlier); otherwise
// g excuses at least up to now.
func (k *liveKey) trySettle(s *liveStream, g *liveGrant) {
	if g.settled || !g.uncappedKnown {
		return
	}
	switch {
	case g.capped:
		k.settle(s, g, max(min(g.uncappedAt, g.capAt), g.ret))
	case g.uncappedAt <= s.now || s.ended:
		k.settle(s, g, g.uncappedAt)
	default:
		k.coverGrant(s, g, s.now)
	}
}

// settle takes end as the end of grant g's excuse.
func (k *liveKey) settle(s *liveStream, g *liveGrant, end time.Duration) {
	g.settled, g.end = true, end
	k.openGrants = slices.DeleteFunc(k.openGrants, func(x *liveGrant) bool { return x == g })
	k.maxEnd = max(k.maxEnd, end)
	k.coverGrant(s, g, end)
}

// extended takes what a renewal of grant g of unknown outcome, held back by
// a cut, moved on: g's uncappedAt, and its excuse end when that was already taken.
func (k *liveKey) extended(s *liveStream, g *liveGrant) {
	if !g.uncappedKnown {
		return
	}
	x := g.uncappedEnd(s.avail.downs)
	if x <= g.uncappedAt {
		return
	}
	g.uncappedAt = x
	if !g.settled {
		k.trySettle(s, g)
		return
	}
	end := x
	if g.capped {
		end = max(min(x, g.capAt), g.ret)
	}
	if end > g.end {
		g.end = end
		k.maxEnd = max(k.maxEnd, end)
		k.coverGrant(s, g, end)
	}
}

// leaseKnown takes grant g's lease, which nothing changes any more, into
// the longest lease of its key.
func (k *liveKey) leaseKnown(s *liveStream, g *liveGrant) {
	if g.leaseFinal {
		return
	}
	g.leaseFinal = true
	if c := g.contribution(); c >= 0 && c > k.longestKnownLease {
		k.longestKnownLease = c
		k.recertify(s)
	}
}

// acquired takes the completion of an acquire.
func (s *liveStream) acquired(p *liveProc, op *history.Op, inv livePending, i int) {
	k := s.key(op.Key)
	k.decide(s)
	switch op.Type {
	case history.Fail:
		k.fail(liveFail{at: op.Time, inv: inv.index, done: i, client: inv.client})
	case history.Info:
		u := &liveUnknown{key: k, invIndex: inv.index, doneIndex: i, invAt: inv.at, doneAt: op.Time, ttl: inv.ttl, client: inv.client, lockClient: p.lockClient}
		s.arrival(u)
		k.unknown(s, u)
	case history.OK:
		s.granted(p, k, op, inv, i)
	}
	// only now: until its excuse was taken, it held the regions after its
	// invoke open
	if j, ok := slices.BinarySearchFunc(k.outstanding, inv.index, func(x livePending, i int) int { return x.index - i }); ok {
		k.outstanding = slices.Delete(k.outstanding, j, j+1)
	}
}

// granted takes a grant: it caps the excuses of the grants of its key
// invoked before it returned, ends its process's previous grant of the
// key, and excuses from its call to its return at least.
func (s *liveStream) granted(p *liveProc, k *liveKey, op *history.Op, inv livePending, i int) {
	s.grants++
	pk := p.of(k)
	prev := pk.grant
	for j := 0; j < len(k.openGrants); j++ {
		if g := k.openGrants[j]; !g.capped && g.okIndex < inv.index {
			g.capped, g.capAt = true, op.Time
			k.trySettle(s, g)
			if g.settled {
				j--
			}
		}
	}
	if prev != nil {
		delete(s.byNum, prev.num)
		s.finishGrant(prev)
		k.leaseKnown(s, prev)
	}
	inOp := history.Op{TTL: inv.ttl}
	lease, session := grantLease(&inOp, op)
	g := &liveGrant{key: k, num: p.grantNum, life: p.life, client: op.Client, invoke: inv.index, okIndex: i, call: inv.at, ret: op.Time,
		lease: lease, session: session, okLease: op.Lease != 0, released: -1, lost: -1, extended: -1, beliefEnd: Forever,
		parts: s.grantParts(inv.at, op.Time)}
	*pk = liveProcKey{key: k, grant: g}
	s.byNum[g.num] = g
	k.openGrants = append(k.openGrants, g)
	k.last = g
	if !session {
		k.nonSession, k.unknowns = true, nil
	}
	k.coverGrant(s, g, g.ret)
	if open := k.openRegion(); g.ret <= open.from {
		open.lastBefore = g
	} else {
		open.grants = append(open.grants, g)
	}
	if lease < 0 && (!k.never || k.sessions && !session) {
		k.never = true
		k.sessions = k.sessions && session
		k.recertify(s)
	}
}

// finishGrant takes grant g's uncappedAt once nothing its process does changes it.
func (s *liveStream) finishGrant(g *liveGrant) {
	if g.uncappedKnown {
		return
	}
	g.uncappedKnown, g.uncappedAt = true, g.uncappedEnd(s.avail.downs)
	if g.life.crashed && g.session && g.released < 0 {
		s.expire(g)
	}
	g.key.trySettle(s, g)
}
