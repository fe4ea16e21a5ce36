// resource_retire.go holds what lets the resource stream forget: which
// sealed writes retire, judged, and which grants retire into the one of
// largest invoke.

package checker

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// resCand is a write that may retire: whether it becomes its grant's
// retired first write (becomesFirst), and the newer grant's write applied before it
// under each reading of its value (newerIfUnique: unique, newerIfShared: not).
type resCand struct {
	write                        *resWrite
	becomesFirst                 bool
	unique                       bool
	newerIfUnique, newerIfShared *resWrite
}

// plan lists the live writes that may retire (resourceStream).
func (v *resView) plan() []resCand {
	out := v.s.sc.cands[:0]
	defer func() { v.s.sc.cands = out }()
	for _, w := range v.k.writes {
		if !w.sealed || !v.guarded(w) {
			continue
		}
		c := resCand{write: w}
		if w.grant != nil {
			if !v.judged(&c) || !v.placed(&c) {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// guarded reports whether two other live writes begin after w's Hi and
// the largest after it may have, and another's hi cannot fall to w's Hi.
func (v *resView) guarded(w *resWrite) bool {
	thr, n := max(w.hi, w.afterMax), 0
	for _, x := range v.largestLo {
		if x != nil && x != w && x.lo > thr {
			n++
		}
	}
	if n < 2 {
		return false
	}
	for _, x := range v.largestHiMin {
		if x != nil && x != w && x.hiMin > w.hi {
			return true
		}
	}
	return false
}

// judged decides c's write under each reading of its value, and reports
// whether every answer is for good.
func (v *resView) judged(c *resCand) bool {
	w := c.write
	c.unique = w.unique()
	var ok bool
	if c.newerIfShared, ok = v.decide(w, resState{w.hi, w.lo}); !ok {
		return false
	}
	if c.unique {
		if c.newerIfUnique, ok = v.decide(w, resState{w.sealedHi, w.sealedAfter}); !ok {
			return false
		}
	}
	return true
}

// placed reports whether c's write is surely not its grant's first write,
// or surely is (becomesFirst), whatever the other writes' hi.
func (v *resView) placed(c *resCand) bool {
	w, g := c.write, c.write.grant
	if g.retiredFirst != nil {
		return true
	}
	mx, mn := g.firstByMax, g.firstByMin
	if mx == w {
		mx = g.secondByMax
	}
	if mn == w {
		mn = g.secondByMin
	}
	if mx != nil && before(mx.hiMax, mx.order, w.hiMin, w.order) {
		return true // another write of it surely comes first
	}
	if mn != nil && !before(w.hiMax, w.order, mn.hiMin, mn.order) {
		return false
	}
	if g.latestLive && w.hiMax > min(v.frontier, v.orphanMin) {
		return false
	}
	c.becomesFirst = true
	return true
}

// retire retires the planned writes, but for those that would become their
// grant's first write and did not end before the Lo of every live write
// with a grant left: those, and the ones that end after them, stay.
func (k *resKey) retire(v *resView, plan []resCand) {
	for i := range plan {
		plan[i].write.candidate = true
	}
	m := v.frontier
	for _, w := range k.writes {
		if w.grant != nil && !w.candidate {
			m = min(m, w.lo)
		}
	}
	rf := v.s.sc.firsts[:0]
	for i := range plan {
		if plan[i].becomesFirst {
			rf = append(rf, &plan[i])
		}
	}
	slices.SortFunc(rf, func(a, b *resCand) int { return cmp.Compare(a.write.hi, b.write.hi) })
	v.s.sc.firsts = rf
	lo := slices.Grow(v.s.sc.firstsMinLo[:0], len(rf)+1)[:len(rf)+1] // the smallest lo from each on
	v.s.sc.firstsMinLo = lo
	lo[len(rf)] = Forever
	for i := len(rf) - 1; i >= 0; i-- {
		lo[i] = min(lo[i+1], rf[i].write.lo)
	}
	n := len(rf)
	for n > 0 && rf[n-1].write.hi >= min(m, lo[n]) {
		n--
	}
	for _, c := range rf[n:] {
		c.write.candidate = false
	}
	for i := range plan {
		if c := &plan[i]; c.write.candidate {
			k.retireWrite(v, c)
		}
	}
	retired := func(w *resWrite) bool { return w.retired }
	k.writes = slices.DeleteFunc(k.writes, retired)
	for _, g := range k.grants {
		g.writes = slices.DeleteFunc(g.writes, retired)
	}
}

// retireWrite retires c's write, keeping its finding.
func (k *resKey) retireWrite(v *resView, c *resCand) {
	w := c.write
	w.retired, w.candidate = true, false
	if g := w.grant; g != nil {
		k.found(v, c)
		if c.becomesFirst {
			g.retiredFirst = w
		}
	}
	if e := w.val; e != nil {
		e.writers--
		if e.writers == 0 {
			k.reads -= len(e.recent)
			delete(k.vals, w.value)
		}
		w.val = nil
	}
	if w.hasVal && w.value != 0 {
		k.written.add(w.value)
	}
}

// found keeps the finding of c's write, if any.
func (k *resKey) found(v *resView, c *resCand) {
	w := c.write
	if c.newerIfShared == nil && (!c.unique || c.newerIfUnique == nil) {
		return
	}
	f := &resFinding{order: w.order, cause: w.grant.okIndex, valueUnique: c.unique, afterIfUnique: w.sealedAfter, afterIfShared: w.lo}
	if c.newerIfShared != nil {
		a := v.staleWrite(w, c.newerIfShared)
		f.ifShared = &a
	}
	if c.unique && c.newerIfUnique != nil {
		a := v.staleWrite(w, c.newerIfUnique)
		f.ifUnique = &a
	}
	k.findings = append(k.findings, f)
	if c.unique {
		k.watched[w.value] = append(k.watched[w.value], f)
	}
}

// merge retires the grants whose writes have retired, that get no more
// writes, whose hold provably ended by now, and that no live grant whose
// acquire overlapped theirs is older than: only the one of largest invoke
// is kept, as retiredLatest.
func (k *resKey) merge(v *resView, now time.Duration) {
	kept := k.grants[:0]
	for _, g := range k.grants {
		if !k.mergeable(v, g, now) {
			kept = append(kept, g)
			continue
		}
		g.dropped, g.collecting = true, false
		g.owner = nil
		if k.retiredLatest == nil || g.invoke > k.retiredLatest.invoke {
			k.retiredLatest = g
		}
	}
	clear(k.grants[len(kept):])
	k.grants = kept
}

// mergeable reports whether the grant g may retire (merge's rule).
func (k *resKey) mergeable(v *resView, g *resGrant, now time.Duration) bool {
	if len(g.writes) > 0 || g.latestLive || g.retiredFirst == nil || !g.laterKnown(math.MaxInt) {
		return false
	}
	if g.holdEnd(math.MaxInt, v.s.drift) > now {
		return false
	}
	for _, a := range v.overlap[g] {
		if !a.latestLive && len(a.writes) == 0 {
			continue // it has nothing left to judge
		}
		if older, known := v.older(a, g); older || !known {
			return false
		}
	}
	return true
}
