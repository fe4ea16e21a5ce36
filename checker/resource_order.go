// resource_order.go holds the resource stream's view of a key and the lease
// order over it: which grant is older (Facts.Older) and which newer grant's
// write was provably applied before an old write (the stale-write rule).

package checker

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// resView is a key's live writes and grants as one compaction, or the
// end, judges them.
type resView struct {
	s     *resourceStream
	k     *resKey
	final bool
	// frontier is E; orphanMin the earliest return of a read of a
	// value no write has written.
	frontier, orphanMin time.Duration
	overlap             map[*resGrant][]*resGrant
	byMax, byMin        *grantIndex
	largestLo           [3]*resWrite // the live writes of largest lo
	largestHiMin        [2]*resWrite // the live writes of largest hiMin
}

// view builds the key's view: at the end (final) from the writes' hi and
// after, else from the bounds they may still take.
func (k *resKey) view(s *resourceStream, e, orphanMin time.Duration, final bool) *resView {
	sc := &s.sc
	if final {
		k.finalBounds(sc)
	} else {
		k.bounds()
	}
	v := &resView{s: s, k: k, final: final, frontier: e, orphanMin: orphanMin}
	for _, g := range k.grants {
		g.rank()
	}
	sc.byMax.build(k.grants, func(g *resGrant) time.Duration { return g.minHiSure })
	sc.byMin.build(k.grants, func(g *resGrant) time.Duration { return g.minHiMaybe })
	v.byMax, v.byMin = &sc.byMax, &sc.byMin
	all := append(sc.grants[:0], k.grants...)
	for _, g := range k.latest {
		if !g.hasWrite {
			all = append(all, g)
		}
	}
	sc.grants = all
	if sc.overlap == nil {
		sc.overlap = map[*resGrant][]*resGrant{}
	}
	clear(sc.overlap)
	v.overlap = overlappingGrants(all, sc.overlap)
	for _, w := range k.writes {
		top(v.largestLo[:], w, func(x *resWrite) time.Duration { return x.lo })
		top(v.largestHiMin[:], w, func(x *resWrite) time.Duration { return x.hiMin })
	}
	return v
}

// top keeps in ws (largest first) the writes of largest by(w).
func top(ws []*resWrite, w *resWrite, by func(*resWrite) time.Duration) {
	for i := range ws {
		if ws[i] == nil || by(w) > by(ws[i]) {
			copy(ws[i+1:], ws[i:])
			ws[i] = w
			return
		}
	}
}

// rank sets g's two smallest (hiMax, order) and (hiMin, order) among its
// live writes, and the smallest hi it surely has (minHiSure) and may have
// (minHiMaybe), its retired first write included.
func (g *resGrant) rank() {
	g.firstByMax, g.secondByMax, g.firstByMin, g.secondByMin = nil, nil, nil, nil
	for _, w := range g.writes {
		if maxBefore(w, g.firstByMax) {
			g.firstByMax, g.secondByMax = w, g.firstByMax
		} else if maxBefore(w, g.secondByMax) {
			g.secondByMax = w
		}
		if minBefore(w, g.firstByMin) {
			g.firstByMin, g.secondByMin = w, g.firstByMin
		} else if minBefore(w, g.secondByMin) {
			g.secondByMin = w
		}
	}
	g.minHiSure, g.minHiMaybe = hiMaxOf(g.firstByMax), hiMinOf(g.firstByMin)
	if f := g.retiredFirst; f != nil {
		g.minHiSure, g.minHiMaybe = min(g.minHiSure, f.hi), min(g.minHiMaybe, f.hi)
	}
}

// minExcept returns the smallest hi g surely has and may have without its
// write o.
func (g *resGrant) minExcept(o *resWrite) (time.Duration, time.Duration) {
	mx, mn := g.firstByMax, g.firstByMin
	if mx == o {
		mx = g.secondByMax
	}
	if mn == o {
		mn = g.secondByMin
	}
	if f := g.retiredFirst; f != nil {
		return min(hiMaxOf(mx), f.hi), min(hiMinOf(mn), f.hi)
	}
	return hiMaxOf(mx), hiMinOf(mn)
}

// grantIndex answers which grant of largest invoke has a key below a time.
type grantIndex struct {
	sorted []*resGrant
	keys   []time.Duration
	top    [][2]*resGrant // by prefix: the two grants of largest invoke
}

// build indexes gs by key, reusing x's buffers.
func (x *grantIndex) build(gs []*resGrant, key func(*resGrant) time.Duration) {
	sorted := append(x.sorted[:0], gs...)
	slices.SortFunc(sorted, func(a, b *resGrant) int { return cmp.Compare(key(a), key(b)) })
	x.sorted = sorted
	x.keys = slices.Grow(x.keys[:0], len(sorted))[:len(sorted)]
	x.top = slices.Grow(x.top[:0], len(sorted))[:len(sorted)]
	var t [2]*resGrant
	for i, g := range sorted {
		x.keys[i] = key(g)
		switch {
		case t[0] == nil || g.invoke > t[0].invoke:
			t = [2]*resGrant{g, t[0]}
		case t[1] == nil || g.invoke > t[1].invoke:
			t[1] = g
		}
		x.top[i] = t
	}
}

// best returns the grant of largest invoke, other than not, whose key is
// below t; nil when none.
func (x *grantIndex) best(t time.Duration, not *resGrant) *resGrant {
	i := sort.Search(len(x.keys), func(i int) bool { return x.keys[i] >= t })
	if i == 0 {
		return nil
	}
	if b := x.top[i-1]; b[0] == not {
		return b[1]
	}
	return x.top[i-1][0]
}

// later returns whichever of a and b was invoked later (nil counts as
// none).
func later(a, b *resGrant) *resGrant {
	if a == nil || b != nil && b.invoke > a.invoke {
		return b
	}
	return a
}

// overlappingGrants lists, for each grant of gs, the others whose
// acquires overlapped its own: neither returned before the other was
// invoked, into out (gs is sorted by invoke).
func overlappingGrants(gs []*resGrant, out map[*resGrant][]*resGrant) map[*resGrant][]*resGrant {
	ids := gs
	slices.SortFunc(ids, func(a, b *resGrant) int { return a.invoke - b.invoke })
	var active []*resGrant
	for _, g := range ids {
		active = slices.DeleteFunc(active, func(a *resGrant) bool { return a.okIndex < g.invoke })
		for _, a := range active {
			out[a] = append(out[a], g)
			out[g] = append(out[g], a)
		}
		active = append(active, g)
	}
	return out
}

// older is Facts.Older(a, b) under the stream's drift, and whether it is
// known for good: b's Later ops invoked before a returned are all known.
func (v *resView) older(a, b *resGrant) (bool, bool) {
	switch {
	case a == b:
		return false, true
	case a.okIndex < b.invoke:
		return true, true
	case b.okIndex < a.invoke:
		return false, true
	}
	return a.ret < b.holdEnd(a.okIndex, v.s.drift), v.final || b.laterKnown(a.okIndex)
}

// resState is a reading of a write's own hi and after.
type resState struct{ hi, after time.Duration }

// decide finds the write of a newer grant that was provably applied before
// the old write o (§4.2, stale-write), with o's hi and after as st says:
// that of the latest-invoked grant with a write whose hi is below o's
// after, when that grant is newer than o's (Facts.Older), else that of the
// latest-invoked newer grant whose acquire overlapped o's grant's. nil
// when there is none. ok is false when the answer may still change: at the
// end it never does.
func (v *resView) decide(o *resWrite, st resState) (nw *resWrite, ok bool) {
	a, t := o.grant, st.after
	if !v.final && t > v.orphanMin {
		return nil, false // a write to come may be applied before t, by the reads
	}
	sure, maybe := v.latestBefore(a, o, st)
	if sure != maybe {
		return nil, false
	}
	if sure != nil {
		older, known := v.older(a, sure)
		if !known {
			return nil, false
		}
		if older {
			return v.first(sure)
		}
	}
	var b, mb *resGrant
	for _, g := range v.overlap[a] {
		if !g.hasWrite || g.dropped || g.minHiMaybe >= t {
			continue
		}
		older, known := v.older(a, g)
		if known && !older {
			continue
		}
		if known && g.minHiSure < t {
			b = later(b, g)
		}
		mb = later(mb, g)
	}
	if b != mb {
		return nil, false
	}
	if b == nil {
		return nil, true
	}
	return v.first(b)
}

// latestBefore returns the latest-invoked grant that surely has a write
// whose hi is below st.after, and the one that may have one, o's own hi
// being st.hi. Every retired grant surely has one.
func (v *resView) latestBefore(a *resGrant, o *resWrite, st resState) (sure, maybe *resGrant) {
	t := st.after
	sure, maybe = v.k.retiredLatest, v.k.retiredLatest
	sure = later(sure, v.byMax.best(t, a))
	maybe = later(maybe, v.byMin.best(t, a))
	mx, mn := a.minExcept(o)
	if min(mx, st.hi) < t {
		sure = later(sure, a)
	}
	if min(mn, st.hi) < t {
		maybe = later(maybe, a)
	}
	return sure, maybe
}

// first returns g's first write (smallest hi, then order), and whether it
// is so for good.
func (v *resView) first(g *resGrant) (*resWrite, bool) {
	if g.retiredFirst != nil {
		return g.retiredFirst, true
	}
	w, other := g.firstByMax, g.firstByMin
	if other == w {
		other = g.secondByMin
	}
	if other != nil && !before(w.hiMax, w.order, other.hiMin, other.order) {
		return nil, false
	}
	if !v.final && g.latestLive && w.hiMax > min(v.frontier, v.orphanMin) {
		return nil, false // a write of it to come may come first
	}
	return w, true
}
