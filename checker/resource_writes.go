// resource_writes.go holds the bounds of each accepted write of the resource
// stream: when it is sealed, and the hi and after it may still end with
// (docs/history.md §4.2, "By reads").

package checker

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// resWrite is an accepted write as the stream keeps it.
type resWrite struct {
	order, done, client int
	lo, hi              time.Duration
	exact               bool
	value               int64
	hasVal              bool
	grant               *resGrant // nil when none
	val                 *resVal   // its value's reads, nil without a value or once retired
	// sealed is set once no read to come agrees with time for it; sealedHi and
	// sealedAfter are then its bounds when its value is unique.
	sealed                bool
	sealedHi, sealedAfter time.Duration
	// hiMin and hiMax bound the hi it may end with, and afterMax the after
	// (Forever: not known yet), in the current view; at the end hiMin and
	// hiMax are its hi, afterMax its after.
	hiMin, hiMax, afterMax time.Duration
	candidate, retired     bool
}

// unique reports whether w's value may be unique to it: no other write of
// it so far.
func (w *resWrite) unique() bool { return w.val != nil && !w.val.dead }

// before reports whether hi a, then order oa, comes before hi b, then
// order ob: the order of a grant's writes (smallest hi first).
func before(a time.Duration, oa int, b time.Duration, ob int) bool {
	return a < b || a == b && oa < ob
}

// maxBefore and minBefore order writes by hiMax and by hiMin (nil: last).
func maxBefore(a, b *resWrite) bool {
	return a != nil && (b == nil || before(a.hiMax, a.order, b.hiMax, b.order))
}

func minBefore(a, b *resWrite) bool {
	return a != nil && (b == nil || before(a.hiMin, a.order, b.hiMin, b.order))
}

// hiMaxOf and hiMinOf are w's hiMax and hiMin, Forever for nil.
func hiMaxOf(w *resWrite) time.Duration {
	if w == nil {
		return Forever
	}
	return w.hiMax
}

func hiMinOf(w *resWrite) time.Duration {
	if w == nil {
		return Forever
	}
	return w.hiMin
}

// sealTimes returns, for each write of ws, S: the earliest hi of an
// accepted write of ws whose Lo is after its Hi (Forever when none). A read
// of its value agrees with time when it was invoked at or before S.
func sealTimes(ws []*resWrite, sc *resScratch) []time.Duration {
	byLo := append(sc.byLo[:0], ws...)
	slices.SortFunc(byLo, func(a, b *resWrite) int { return cmp.Compare(a.lo, b.lo) })
	minHiFrom := slices.Grow(sc.minHi[:0], len(byLo)+1)[:len(byLo)+1]
	minHiFrom[len(byLo)] = Forever
	for i := len(byLo) - 1; i >= 0; i-- {
		minHiFrom[i] = min(minHiFrom[i+1], byLo[i].hi)
	}
	out := slices.Grow(sc.seals[:0], len(ws))[:len(ws)]
	sc.byLo, sc.minHi, sc.seals = byLo, minHiFrom, out
	for i, w := range ws {
		j := sort.Search(len(byLo), func(j int) bool { return byLo[j].lo > w.hi })
		out[i] = minHiFrom[j]
	}
	return out
}

// tighten returns w's hi and after by the reads of its value (unique to
// it) that agree with time, those invoked at or before s.
func (w *resWrite) tighten(s time.Duration) (time.Duration, time.Duration) {
	e := w.val
	hi, after := min(w.hi, e.agreedMinRet), max(w.lo, e.agreedMaxCall)
	for _, r := range e.recent {
		if r.call <= s {
			hi, after = min(hi, r.ret), max(after, r.call)
		}
	}
	return hi, after
}

// seal seals each live write that an accepted write applied after it
// ended before e.
func (k *resKey) seal(e time.Duration, sc *resScratch) {
	for i, s := range sealTimes(k.writes, sc) {
		w := k.writes[i]
		if w.sealed || s >= e {
			continue
		}
		w.sealed = true
		w.sealedHi, w.sealedAfter = w.hi, w.lo
		if w.unique() {
			w.sealedHi, w.sealedAfter = w.tighten(s)
			w.val.sealed = true
			k.reads -= len(w.val.recent)
			w.val.recent = nil
		}
	}
}

// bounds sets the hi and after each live write may still end with.
func (k *resKey) bounds() {
	for _, w := range k.writes {
		u := w.unique()
		w.hiMin, w.hiMax, w.afterMax = w.hi, w.hi, w.lo
		switch {
		case w.sealed && u:
			w.hiMin, w.afterMax = w.sealedHi, w.sealedAfter
		case !w.sealed:
			w.afterMax = Forever
			if u {
				w.hiMin = min(w.hi, w.val.agreedMinRet)
				for _, r := range w.val.recent {
					w.hiMin = min(w.hiMin, r.ret)
				}
			}
		}
	}
}

// finalBounds sets the hi and after of each live write at the end.
func (k *resKey) finalBounds(sc *resScratch) {
	seals := sealTimes(k.writes, sc)
	for i, w := range k.writes {
		hi, after := w.hi, w.lo
		switch {
		case !w.unique():
		case w.sealed:
			hi, after = w.sealedHi, w.sealedAfter
		default:
			hi, after = w.tighten(seals[i])
		}
		w.hiMin, w.hiMax, w.afterMax = hi, hi, after
	}
}
