// live_unavailable.go holds the readings of a key (whether some grant never
// expires, whether such grants are session locks, the longest lease) and
// the unavailable rule under each (docs/history.md §4.6).

package checker

import (
	"fmt"
	"slices"
	"time"
)

// liveRegime is a reading of what decides a key's excuses at the end:
// whether some grant of it never expires, whether every such grant is a
// session lock, and its longest lease.
type liveRegime struct {
	never, sessions bool
	L               time.Duration
	// sessionExcuses are the excuses of the acquires of unknown outcome whose
	// session lease the down stretches moved on (sessionReach); only at
	// the end.
	sessionExcuses []span
}

// readings returns the readings of k that the rest of the history can
// still make true, with k's longest lease known for good: a lock whose
// grants all expire so far may yet get a grant that never expires, a
// session lock or not.
func (k *liveKey) readings() []liveRegime {
	var out []liveRegime
	if !k.never {
		out = append(out, liveRegime{never: false, sessions: true, L: k.longestKnownLease})
	}
	if k.sessions {
		out = append(out, liveRegime{never: true, sessions: true, L: k.longestKnownLease})
	}
	return append(out, liveRegime{never: true, sessions: false, L: k.longestKnownLease})
}

// liveStretch is an unavailable stretch of a region, with what its anomaly
// names.
type liveStretch struct {
	from, to          time.Duration
	period            int // the index of its majority period
	refusals, workers int
	first, last       liveFail
	grant             *liveGrant // the last grant that returned at or before from
}

// unavailable finds the stretches in which k was unavailable
// (docs/history.md §4.6) under k's final reading rg, region by region:
// each region lies between certain excuses, so every stretch that may be
// unavailable lies in one. It also reports whether k could be judged (some
// period left a stretch that long).
func (s *liveStream) unavailable(k *liveKey, rg liveRegime) ([]Anomaly, bool) {
	judged := false
	for i := range s.avail.periods {
		p := &s.avail.periods[i]
		lo := p.from
		if p.back {
			lo += rg.L
		}
		if p.to-lo >= s.opts.UnavailableWindow {
			judged = true
			break
		}
	}
	var out []Anomaly
	for _, r := range k.regions {
		var sts []liveStretch
		if r.compact {
			sts = r.found[slices.IndexFunc(r.readings, func(x liveRegime) bool { return x.never == rg.never && x.sessions == rg.sessions })]
		} else {
			sts = s.regionStretches(k, r, rg)
		}
		for _, st := range sts {
			out = append(out, s.stretchAnomaly(k, st))
		}
	}
	return out, judged
}

// regionStretches returns the unavailable stretches of region r of k
// under reading rg: the walk over its maximal stretches between the
// excuses that decide r, in every majority period that overlaps it.
func (s *liveStream) regionStretches(k *liveKey, r *liveRegion, rg liveRegime) []liveStretch {
	if len(r.fails) < s.opts.Attempts {
		return nil
	}
	excused := mergeSpans(s.regionSpans(r, rg))
	var out []liveStretch
	s.avail.each(r.from, r.to, func(i int, p *upPeriod, _ time.Duration) bool {
		out = append(out, s.stretches(r, i, p, excused, rg.L)...)
		return true
	})
	return out
}

// regionSpans returns the excuses of a key at the end, under reading rg,
// as far as they decide region r: what reaches from before its start (and
// the certain excuses before it), what began in it, and from its end on
// (the certain excuse that ended it) when it ended.
func (s *liveStream) regionSpans(r *liveRegion, rg liveRegime) []span {
	reach := max(r.from, r.reachBefore.final(rg))
	skews := s.faults.skews
	j, _ := slices.BinarySearchFunc(skews, r.from, func(sk span, t time.Duration) int { return cmpDur(sk.from, t) })
	if j > 0 {
		reach = max(reach, skews[j-1].to+rg.L)
	}
	spans := []span{{minTime, reach}}
	for _, u := range r.unknownsIn {
		spans = append(spans, span{u.invAt, u.final(rg)})
	}
	spans = append(spans, rg.sessionExcuses...)
	for ; j < len(skews) && (r.open || skews[j].from <= r.to); j++ {
		spans = append(spans, span{skews[j].from, skews[j].to + rg.L})
	}
	if !r.open {
		spans = append(spans, span{r.to, Forever})
	}
	return spans
}

// stretches finds the unavailable stretches of majority period p, of
// index period, inside region r, whose excuses are excused, the longest
// lease L.
func (s *liveStream) stretches(r *liveRegion, period int, p *upPeriod, excused []span, L time.Duration) []liveStretch {
	lo := p.from
	if p.back {
		lo += L
	}
	if p.to-lo < s.opts.UnavailableWindow {
		return nil
	}
	var out []liveStretch
	j, _ := slices.BinarySearchFunc(excused, lo, func(sp span, t time.Duration) int {
		if sp.to > t {
			return 1
		}
		return -1
	})
	for a := lo; a < p.to; {
		b := p.to
		if j < len(excused) && excused[j].from < b {
			b = max(excused[j].from, a)
		}
		if b-a >= s.opts.UnavailableWindow {
			if st, ok := s.unavailableIn(r, period, a, b); ok {
				out = append(out, st)
			}
		}
		if j >= len(excused) || excused[j].from >= p.to {
			break
		}
		a = excused[j].to
		j++
	}
	return out
}

// unavailableIn returns the unavailable stretch [from, to] of the majority
// period of index period, inside region r, when enough acquires were
// refused in it (unavailableIn).
func (s *liveStream) unavailableIn(r *liveRegion, period int, from, to time.Duration) (liveStretch, bool) {
	i, j := r.count(from, to)
	if j-i < s.opts.Attempts {
		return liveStretch{}, false
	}
	workers := map[int]bool{}
	for _, f := range r.fails[i:j] {
		workers[f.client] = true
	}
	st := liveStretch{from: from, to: to, period: period, refusals: j - i, workers: len(workers), first: r.fails[i], last: r.fails[j-1], grant: r.lastBefore}
	for _, g := range r.grants {
		if g.ret <= from {
			st.grant = g
		}
	}
	return st, true
}

// stretchAnomaly is the unavailable anomaly of k over stretch st.
func (s *liveStream) stretchAnomaly(k *liveKey, st liveStretch) Anomaly {
	ops := []int{st.first.inv, st.first.done, st.last.inv, st.last.done}
	before := "no grant of it came before"
	if g := st.grant; g != nil {
		ops = append([]int{g.invoke, g.okIndex}, ops...)
		before = "the last grant before it was " + g.text()
	}
	return Anomaly{
		Kind:   Unavailable,
		Key:    k.name,
		Ops:    ops,
		Window: &Window{Start: st.from, End: st.to},
		Message: fmt.Sprintf("%s unavailable from %s to %s with %s: %s by %s failed and none succeeded, with no lease left, no acquire of unknown outcome in doubt and nobody believing it held %s; %s",
			k.name, secs(st.from), secs(st.to), s.avail.periods[st.period].nodesText(st.from, st.to), plural(st.refusals, "acquire"), plural(st.workers, "worker"), k.name, before),
	}
}
