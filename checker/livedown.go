package checker

import (
	"slices"
	"sort"
	"time"
)

// This file holds what the liveness report reads of the down stretches
// (docs/history.md §4.5): a grant excuses none of their moments before its
// return, and they move on the end of a session lease (a stretch in which
// some server node was down may have had no leader to expire sessions).

// sessionEnd is the end of a session lease that would end at e, with
// lease x, moved on by the down stretches downs (in order, apart; the last
// may run to the end of the history): a leader expires sessions, and a
// stretch in which some server node was down may have had none, after
// which a new leader gives every session its whole lease again
// (docs/history.md §4.5, "Sessions kept by a leader"). It is the least end
// at or after e such that every down stretch that began before it ended at
// b with b + x at or before it.
func sessionEnd(e, x time.Duration, downs []span) time.Duration {
	if e == Forever || x < 0 {
		return e
	}
	i := sort.Search(len(downs), func(i int) bool { return downs[i].to+x > e })
	for ; i < len(downs) && downs[i].from < e; i++ {
		e = max(e, downs[i].to+x)
	}
	return e
}

// upParts returns the parts of [from, to) outside the down stretches downs
// (in order, apart): before its return, a grant excuses no moment of a down
// stretch (docs/history.md §4.5).
func upParts(from, to time.Duration, downs []span) []span {
	i := sort.Search(len(downs), func(i int) bool { return downs[i].to > from })
	if i == len(downs) || downs[i].from >= to {
		return []span{{from, to}}
	}
	var out []span
	for ; i < len(downs) && downs[i].from < to; i++ {
		if downs[i].from > from {
			out = append(out, span{from, downs[i].from})
		}
		from = max(from, downs[i].to)
	}
	if from < to {
		out = append(out, span{from, to})
	}
	return out
}

// expire keeps the grant g, whose holder crashed, among those whose
// session lease a down stretch may still move, and drops those that none
// can move any more: their excuse ended before now, or before the down
// stretch in force began.
func (s *liveStream) expire(g *liveGrant) {
	s.expiring = append(s.expiring, g)
	if len(s.expiring) <= 2*s.expiringKept+8 {
		return
	}
	s.pruneExpiring()
}

// pruneExpiring drops the grants whose session lease no down stretch can
// move any more.
func (s *liveStream) pruneExpiring() {
	from := s.now
	if s.avail.down {
		from = s.avail.downSince
	}
	s.expiring = slices.DeleteFunc(s.expiring, func(g *liveGrant) bool { return g.uncappedAt < from })
	s.expiringKept = len(s.expiring)
}

// downRecord takes an availability record at time at that says whether
// some server node is down (or cannot be read): a down stretch begins or
// ends there. At its end, it moves on the session leases of the crashed
// holders (docs/history.md §4.5, "Sessions kept by a leader").
func (s *liveStream) downRecord(at time.Duration, down bool) {
	a := &s.avail
	switch {
	case down && !a.down:
		s.pruneExpiring()
		a.down, a.downSince = true, at
	case !down && a.down:
		a.down = false
		a.downs = append(a.downs, span{a.downSince, at})
		for _, g := range s.expiring {
			g.key.extended(s, g)
		}
	}
}

// grantParts returns the parts of [call, ret) outside every down stretch,
// the one in force up to ret included; nil when that is all of it.
func (s *liveStream) grantParts(call, ret time.Duration) []span {
	a := &s.avail
	parts := upParts(call, ret, a.downs)
	if a.down {
		parts = slices.DeleteFunc(parts, func(p span) bool { return p.from >= a.downSince })
		if n := len(parts); n > 0 {
			parts[n-1].to = min(parts[n-1].to, a.downSince)
		}
	}
	if len(parts) == 1 && parts[0] == (span{call, ret}) {
		return nil
	}
	if parts == nil {
		parts = []span{}
	}
	return parts
}

// coverGrant cuts the excuse of grant g up to end out of k's regions:
// before its return only its parts outside the down stretches
// (docs/history.md §4.5).
func (k *liveKey) coverGrant(s *liveStream, g *liveGrant, end time.Duration) {
	if g.parts == nil {
		k.cover(s, g.call, end)
		return
	}
	for _, p := range g.parts {
		k.cover(s, p.from, p.to)
	}
	k.cover(s, g.ret, end)
}

// sessionReach returns, under the final reading rg of k, the excuses of
// k's acquires of unknown outcome with a ttl whose session lease the down
// stretches move past its end (docs/history.md §4.5, "Sessions kept by a
// leader"), each from its invoke to its moved end: when every grant of k
// is a session lock and the lock expires.
func (s *liveStream) sessionReach(k *liveKey, rg liveRegime) []span {
	if rg.never || k.nonSession || len(s.avail.downs) == 0 {
		return nil
	}
	var out []span
	for _, u := range k.unknowns {
		x := max(u.ttl, rg.L)
		if e := sessionEnd(u.arrive+x, x, s.avail.downs); e > u.arrive+x {
			out = append(out, span{u.invAt, e})
		}
	}
	return out
}
