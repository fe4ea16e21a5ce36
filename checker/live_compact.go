// live_compact.go holds what bounds the liveness report's memory: the
// moment up to which nothing open can change a key's certain excuses, and
// the compaction of the regions before it into their unavailable stretches.

package checker

import (
	"slices"
	"time"
)

// toCompact puts the ended region r, worth keeping, among those to make
// compact once nothing open can reach it.
func (k *liveKey) toCompact(r *liveRegion) {
	if slices.Contains(k.compactable, r) {
		return
	}
	i, _ := slices.BinarySearchFunc(k.compactable, r.to, func(x *liveRegion, t time.Duration) int { return cmpDur(x.to, t) })
	k.compactable = slices.Insert(k.compactable, i, r)
}

// stable returns the moment up to which nothing still open can change
// the certain excuses of k: the call of a grant whose excuse end is not
// yet taken, the invoke of an acquire outstanding or of one of unknown
// outcome without a ttl whose client is still open, the start of a clock
// fault in force, the call of a crashed holder's grant whose session lease
// the down stretch in force moves on, now.
func (k *liveKey) stable(s *liveStream) time.Duration {
	f := s.now
	for _, g := range k.openGrants {
		f = min(f, g.call)
	}
	if len(k.outstanding) > 0 {
		f = min(f, k.outstanding[0].at)
	}
	for _, u := range k.unknownsAwaitingClose {
		if u.ttl <= 0 {
			f = min(f, u.invAt)
		}
	}
	for _, l := range s.faults.late {
		switch {
		case l.acquire != nil && l.key == k:
			f = min(f, l.invAt)
		case l.renewedGrant != nil && l.key == k:
			f = min(f, l.renewedGrant.call)
		}
	}
	if s.faults.skewing {
		f = min(f, s.faults.skewSince)
	}
	if a := &s.avail; a.down {
		for _, g := range s.expiring {
			if g.key == k && g.uncappedAt > a.downSince {
				f = min(f, g.call) // the down stretch in force moves its end on
			}
		}
	}
	return f
}

// compactAll makes compact the regions waiting to be that nothing open
// can reach any more.
func (k *liveKey) compactAll(s *liveStream) {
	if len(k.compactable) == 0 {
		return
	}
	f := k.stable(s)
	n := 0
	for n < len(k.compactable) && k.compactable[n].to <= f {
		if r := k.compactable[n]; !r.gone && !r.compact {
			k.compact(s, r)
		}
		n++
	}
	k.compactable = slices.Delete(k.compactable, 0, n)
}

// compact judges region r, which nothing open can reach any more, under
// every reading of k the rest of the history can still make true: when
// none finds an unavailable stretch, r goes; when a longer lease (which
// only shortens stretches) cannot change what each finds, r keeps only
// that. Otherwise r stays as it is; so does it while a reading needs the
// close of a client still open.
func (k *liveKey) compact(s *liveStream, r *liveRegion) {
	rgs := k.readings()
	found := make([][]liveStretch, len(rgs))
	some := false
	for i, rg := range rgs {
		if rg.never && rg.sessions && r.waitsForClose() {
			return
		}
		found[i] = s.regionStretches(k, r, rg)
		if len(found[i]) == 0 {
			continue
		}
		if s.lengthens(r, rg) {
			return
		}
		some = true
	}
	if !some {
		k.drop(r)
		return
	}
	r.compact, r.readings, r.found = true, rgs, found
	r.fails, r.reachBefore, r.unknownsIn, r.lastBefore, r.grants = nil, liveReach{}, nil, nil, nil
}

// mayFind reports whether the compact region r holds an unavailable
// stretch under a reading of k still possible.
func (k *liveKey) mayFind(r *liveRegion) bool {
	for i, rg := range r.readings {
		possible := !rg.sessions || rg.never && k.sessions || !k.never
		if len(r.found[i]) > 0 && possible {
			return true
		}
	}
	return false
}

// waitsForClose reports whether an acquire of unknown outcome that reaches
// into r has a client still open.
func (r *liveRegion) waitsForClose() bool {
	for _, cl := range r.reachBefore.pending {
		if !cl.closed {
			return true
		}
	}
	return slices.ContainsFunc(r.unknownsIn, func(u *liveUnknown) bool { return !u.lockClient.closed })
}

// lengthens reports whether a longer lease than rg's could change the
// stretches of region r under rg: through the reach of the acquires of
// unknown outcome before it or in it (for a lock that expires), a clock
// fault that began before its end, or the settling of a majority period
// that came back and overlaps it.
func (s *liveStream) lengthens(r *liveRegion, rg liveRegime) bool {
	if !rg.never && (r.reachBefore.any || len(r.unknownsIn) > 0) {
		return true
	}
	if len(s.faults.skews) > 0 && s.faults.skews[0].from <= r.to {
		return true
	}
	back := false
	s.avail.each(r.from, r.to, func(_ int, p *upPeriod, _ time.Duration) bool {
		back = back || p.back
		return !back
	})
	return back
}
