// live_unknown.go holds the liveness report's acquires and renewals of
// unknown outcome: how far their excuses reach under each reading of a key,
// and the latest arrival of a request a cut may have held back
// (docs/history.md §4.5, "Requests held back by a cut").

package checker

import (
	"slices"
	"time"
)

// unknownRenewal takes a renewal of g of unknown outcome whose latest
// arrival is at, with ttl ttl (docs/history.md §4.5: it may have moved the
// lease's end to at plus its lease).
func (g *liveGrant) unknownRenewal(at, ttl time.Duration) {
	lease := ttl
	if lease <= 0 {
		lease = g.lease
	}
	to := Forever
	if lease >= 0 {
		to = at + lease
	}
	if !g.unknownRenewed || lease < 0 || g.unknownRenewalLease >= 0 && lease > g.unknownRenewalLease {
		g.unknownRenewalLease = lease
	}
	g.unknownRenewed = true
	g.extended = max(g.extended, to)
}

// liveUnknown is an acquire of unknown outcome (info) of a key.
type liveUnknown struct {
	key                 *liveKey
	invIndex, doneIndex int
	invAt, doneAt       time.Duration
	ttl                 time.Duration
	client              int
	lockClient          *liveClient // its process's client
	// arrive is its latest arrival (docs/history.md §4.5): its completion,
	// or later when a cut may have held its request back. It moves while
	// late (liveLate).
	arrive time.Duration
	late   bool
}

// final is u's excuse end (docs/history.md §4.5) under reading rg.
func (u *liveUnknown) final(rg liveRegime) time.Duration {
	switch {
	case u.ttl > 0 && !rg.never:
		return u.arrive + max(u.ttl, rg.L)
	case u.ttl <= 0 || rg.sessions:
		if u.lockClient.closed {
			return u.lockClient.at
		}
	}
	return Forever
}

// certain is the least end u's excuse can still have: under every reading
// the rest of the history allows of k's never, sessions and longest lease
// (which is at least k.longestKnownLease), with its client closed at the latest
// moment known.
func (u *liveUnknown) certain(k *liveKey) time.Duration {
	closeAt := u.doneAt
	if u.lockClient.closed {
		closeAt = u.lockClient.at
	}
	if u.ttl <= 0 {
		return closeAt
	}
	end := Forever
	if k.sessions {
		end = closeAt
	}
	if !k.never {
		end = min(end, u.arrive+max(u.ttl, k.longestKnownLease))
	}
	return end
}

// liveReach is how far the excuses of the acquires of unknown outcome with
// a ttl invoked before a moment reach: the latest completion plus ttl and
// completion (for a lock that expires), and client close (for one that
// does not).
type liveReach struct {
	any            bool
	arrivalPlusTTL time.Duration // the latest arrival plus ttl
	latestArrival  time.Duration // the latest arrival
	closed         time.Duration
	pending        []*liveClient  // clients not closed when their acquire was added
	late           []*liveUnknown // acquires whose arrival could still move when added
}

// add takes the acquire of unknown outcome u, with a ttl, into the reach.
func (r *liveReach) add(u *liveUnknown) {
	if !r.any {
		r.any, r.arrivalPlusTTL, r.latestArrival, r.closed = true, minTime, minTime, minTime
	}
	r.arrivalPlusTTL = max(r.arrivalPlusTTL, u.arrive+u.ttl)
	r.latestArrival = max(r.latestArrival, u.arrive)
	if u.late {
		r.late = append(slices.Clip(r.late), u)
	}
	switch {
	case u.lockClient.closed:
		r.closed = max(r.closed, u.lockClient.at)
	case !slices.Contains(r.pending, u.lockClient):
		r.pending = append(slices.Clip(r.pending), u.lockClient)
	}
}

// final is the reach under reading rg; minTime when r holds no acquire.
func (r *liveReach) final(rg liveRegime) time.Duration {
	switch {
	case !r.any:
		return minTime
	case !rg.never:
		return r.arrivals(rg.L)
	case !rg.sessions:
		return Forever
	}
	end := r.closed
	for _, cl := range r.pending {
		if !cl.closed {
			return Forever
		}
		end = max(end, cl.at)
	}
	return end
}

// certain is the least the reach can still be (liveUnknown.certain).
func (r *liveReach) certain(k *liveKey) time.Duration {
	if !r.any {
		return minTime
	}
	end := Forever
	if k.sessions {
		end = r.closed
		for _, cl := range r.pending {
			if cl.closed {
				end = max(end, cl.at)
			}
		}
	}
	if !k.never {
		end = min(end, r.arrivals(k.longestKnownLease))
	}
	return end
}

// arrivals is how far the reach's acquires excuse a lock that expires,
// with L the longest lease: the latest arrival plus the larger of its ttl
// and L.
func (r *liveReach) arrivals(L time.Duration) time.Duration {
	end := max(r.arrivalPlusTTL, r.latestArrival+L)
	for _, u := range r.late {
		end = max(end, u.arrive+max(u.ttl, L))
	}
	return end
}

// unknown takes an acquire of unknown outcome of k.
func (k *liveKey) unknown(s *liveStream, u *liveUnknown) {
	if u.ttl > 0 && !k.nonSession {
		k.unknowns = append(k.unknowns, u)
	}
	if u.ttl > 0 {
		k.allWithTTL.add(u)
		if k.firstWithTTL == nil {
			k.firstWithTTL = u
		}
	}
	switch {
	case !u.lockClient.closed:
		u.lockClient.waiting = append(u.lockClient.waiting, u)
		k.unknownsAwaitingClose = append(k.unknownsAwaitingClose, u)
	case u.ttl <= 0:
		k.maxEnd = max(k.maxEnd, u.lockClient.at)
	}
	k.cover(s, u.invAt, u.certain(k))
	if u.ttl > 0 {
		open := k.openRegion()
		if u.invAt < open.from {
			open.reachBefore.add(u)
		} else {
			open.unknownsIn = append(open.unknownsIn, u)
		}
	}
}

// arrivalOf returns the latest arrival, as far as the cuts that have ended
// tell, of a request invoked at invAt and completed at doneAt
// (docs/history.md §4.5, "Requests held back by a cut"): its completion,
// moved on by every ended cut in force at some moment from its invoke to
// its arrival. A cut in force now may hold it further (healed).
func (s *liveStream) arrivalOf(invAt, doneAt time.Duration) time.Duration {
	fs := &s.faults
	arrive := doneAt
	i, _ := slices.BinarySearchFunc(fs.cuts, invAt, func(c span, t time.Duration) int { return cmpDur(c.to, t) })
	for _, c := range fs.cuts[i:] {
		if c.from > arrive {
			break
		}
		arrive = max(arrive, s.opts.heldUntil(invAt, c.to))
	}
	return arrive
}

// arrival sets the latest arrival of the acquire of unknown outcome u,
// completed now, and keeps it late while it may still move.
func (s *liveStream) arrival(u *liveUnknown) {
	u.arrive = s.arrivalOf(u.invAt, u.doneAt)
	if s.faults.cutting || u.arrive > s.now {
		u.late = true
		s.late(&liveLate{invAt: u.invAt, arrive: u.arrive, held: s.faults.cutting, key: u.key, acquire: u})
	}
}

// unknownRenewal takes a renewal of grant g of unknown outcome, invoked at
// invAt with ttl and completed at doneAt (the end of the history when it
// is still pending): its lease may run from its latest arrival.
func (s *liveStream) unknownRenewal(g *liveGrant, invAt, doneAt, ttl time.Duration) {
	arrive := s.arrivalOf(invAt, doneAt)
	g.unknownRenewal(arrive, ttl)
	if s.faults.cutting || arrive > s.now {
		s.late(&liveLate{invAt: invAt, arrive: arrive, held: s.faults.cutting, key: g.key, renewedGrant: g, ttl: ttl})
	}
}

// late keeps l among the requests whose arrival may still move.
func (s *liveStream) late(l *liveLate) {
	s.faults.late = append(s.faults.late, l)
	if !l.held {
		s.faults.lateMin = min(s.faults.lateMin, l.arrive)
	}
}

// healed moves on, at the heal of the cuts in force, the arrival of every
// request they held, and takes what that excuses.
func (s *liveStream) healed(at time.Duration) {
	fs := &s.faults
	var keys []*liveKey
	var grants []*liveGrant
	for _, l := range fs.late {
		if !l.held {
			continue
		}
		l.held = false
		l.arrive = max(l.arrive, s.opts.heldUntil(l.invAt, at))
		if l.acquire != nil {
			l.acquire.arrive = l.arrive
			if !slices.Contains(keys, l.key) {
				keys = append(keys, l.key)
			}
		} else {
			l.renewedGrant.unknownRenewal(l.arrive, l.ttl)
			if !slices.Contains(grants, l.renewedGrant) {
				grants = append(grants, l.renewedGrant)
			}
		}
	}
	s.arrived()
	for _, g := range grants {
		g.key.extended(s, g)
	}
	for _, k := range keys {
		k.recertify(s)
	}
}

// arrived takes the requests whose arrival the history has passed, with no
// cut holding them, off the late list: nothing moves it any more.
func (s *liveStream) arrived() {
	fs := &s.faults
	fs.lateMin = Forever
	fs.late = slices.DeleteFunc(fs.late, func(l *liveLate) bool {
		if l.held || l.arrive >= s.now && !s.ended {
			if !l.held {
				fs.lateMin = min(fs.lateMin, l.arrive)
			}
			return false
		}
		if l.acquire != nil {
			l.acquire.late = false
		}
		return true
	})
}
