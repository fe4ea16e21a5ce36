// live_regions.go holds the regions of a key: the stretches no certain
// excuse covers, with the refusals in them, how each certain excuse cuts
// them, and which ended regions are worth keeping.

package checker

import (
	"slices"
	"time"
)

// liveFail is a refused acquire: its invoke and fail and its worker.
type liveFail struct {
	at        time.Duration
	inv, done int
	client    int
}

// liveRegion is a stretch [from, to] of a key that no certain excuse
// covers, with the refusals in it and what the excuses that are not yet
// certain need to judge it at the end (liveStream).
type liveRegion struct {
	from, to    time.Duration
	open        bool // the last region, open to the end (to is Forever)
	decided     bool // judged worth keeping once its to had passed
	gone        bool // cut away
	fails       []liveFail
	reachBefore liveReach      // the acquires of unknown outcome with a ttl invoked before from
	unknownsIn  []*liveUnknown // those invoked in it, in order
	lastBefore  *liveGrant     // the last grant that returned at or before from
	grants      []*liveGrant   // the grants that returned after from, in order
	// compact is set once nothing still open can reach the region: found
	// then holds its unavailable stretches under each of readings, and
	// fails, reachBefore and unknownsIn are dropped.
	compact  bool
	readings []liveRegime
	found    [][]liveStretch
}

// count returns the number of refusals of r at or after a and at or before
// b, and the range of them in r.fails.
func (r *liveRegion) count(a, b time.Duration) (int, int) {
	i, _ := slices.BinarySearchFunc(r.fails, a, func(f liveFail, t time.Duration) int { return cmpDur(f.at, t) })
	j, found := slices.BinarySearchFunc(r.fails, b, func(f liveFail, t time.Duration) int { return cmpDur(f.at, t) })
	for found && j < len(r.fails) && r.fails[j].at == b {
		j++
	}
	return i, j
}

// cmpDur compares two durations.
func cmpDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// before returns the part of r before the certain excuse [from, to) that
// overlaps it: [r.from, from], nil when empty.
func (r *liveRegion) before(from time.Duration) *liveRegion {
	if from <= r.from {
		return nil
	}
	left := &liveRegion{from: r.from, to: from, reachBefore: r.reachBefore, lastBefore: r.lastBefore}
	_, j := r.count(minTime, from)
	left.fails = slices.Clone(r.fails[:j])
	for _, u := range r.unknownsIn {
		if u.invAt < from {
			left.unknownsIn = append(left.unknownsIn, u)
		}
	}
	for _, g := range r.grants {
		if g.ret <= from {
			left.grants = append(left.grants, g)
		}
	}
	return left
}

// after makes r the part of itself after the certain excuse [from, to)
// that overlaps it, [to, r.to], and reports whether anything is left: the
// open region always is.
func (r *liveRegion) after(to time.Duration) bool {
	if !r.open && to >= r.to {
		return false
	}
	i, _ := r.count(to, Forever)
	r.fails = r.fails[:copy(r.fails, r.fails[i:])]
	inner := r.unknownsIn[:0:0]
	for _, u := range r.unknownsIn {
		if u.invAt < to {
			r.reachBefore.add(u)
		} else {
			inner = append(inner, u)
		}
	}
	r.unknownsIn = inner
	grants := r.grants[:0:0]
	for _, g := range r.grants {
		if g.ret <= to {
			r.lastBefore = g
		} else {
			grants = append(grants, g)
		}
	}
	r.from, r.grants = to, grants
	return true
}

// liveKey is what liveStream keeps of one key.
type liveKey struct {
	name                  string
	longestKnownLease     time.Duration  // the longest lease of the grants whose lease is known for good
	never                 bool           // some grant's lease is -1
	sessions              bool           // every grant with lease -1 is a session lock
	last                  *liveGrant     // the latest grant
	openGrants            []*liveGrant   // the grants whose excuse end is not yet taken, in the order of their oks
	maxEnd                time.Duration  // the latest end of an excuse that no lease changes
	allWithTTL            liveReach      // every acquire of unknown outcome with a ttl
	firstWithTTL          *liveUnknown   // the first of them to complete
	unknownsAwaitingClose []*liveUnknown // acquires of unknown outcome whose client is still open, in order
	regions               []*liveRegion  // in order; the last is open
	// undecided are the regions that ended at a moment the history has
	// not yet passed: refusals may still come at their end.
	undecided []*liveRegion
	// outstanding are the acquires of the key outstanding, in order.
	outstanding []livePending
	// compactable are the ended regions worth keeping that are not yet
	// compact, in the order of their ends.
	compactable       []*liveRegion
	waiting           []livePending // at the end: the acquires still pending, in order
	heldGrant         *liveGrant    // at the end: the first grant whose excuse never ends
	longestLeaseAtEnd time.Duration // at the end: the longest lease, also of the grants whose lease was not known for good
	// nonSession is set once some grant of the key is no session lock;
	// until then, unknowns are its acquires of unknown outcome with a ttl,
	// whose session lease the down stretches may move (docs/history.md
	// §4.5, "Sessions kept by a leader").
	nonSession bool
	unknowns   []*liveUnknown
}

// openRegion returns k's open region, the last.
func (k *liveKey) openRegion() *liveRegion { return k.regions[len(k.regions)-1] }

// cover cuts the certain excuse [from, to) out of k's regions: the
// refusals strictly inside it can count for nothing, a region it splits
// ends at from (its refusals at from stay) and what is left begins at to.
func (k *liveKey) cover(s *liveStream, from, to time.Duration) {
	if to <= from {
		return
	}
	i, _ := slices.BinarySearchFunc(k.regions, from, func(r *liveRegion, t time.Duration) int {
		if r.open || r.to > t {
			return 1
		}
		return -1
	})
	j := i
	for j < len(k.regions) && k.regions[j].from < to {
		j++
	}
	if i == j {
		return
	}
	if r := k.regions[i]; j == i+1 && r.open && !k.keepsBefore(s, r, from) {
		r.after(to) // the common cut: the open region's start moves on
		return
	}
	var parts []*liveRegion
	for _, r := range k.regions[i:j] {
		if r.compact {
			parts = append(parts, r)
			continue
		}
		if k.keepsBefore(s, r, from) {
			if left := r.before(from); left != nil {
				parts = append(parts, left)
			}
		}
		if r.after(to) && (r.open || r.to > r.from) {
			parts = append(parts, r)
			r.decided = false
		} else {
			r.gone = true
		}
	}
	k.regions = slices.Replace(k.regions, i, j, parts...)
	for _, part := range parts {
		if !part.open && !part.compact && !part.decided {
			k.judge(s, part)
		}
	}
}

// keepsBefore reports whether the part of region r before from is worth
// taking apart when an excuse from from on cuts r: a part that ended
// before now with fewer refusals than opts.Attempts would go at once.
func (k *liveKey) keepsBefore(s *liveStream, r *liveRegion, from time.Duration) bool {
	if from <= r.from {
		return false
	}
	_, n := r.count(minTime, from)
	return n >= s.opts.Attempts || from >= s.now || s.ended
}

// judge decides whether the ended region r is worth keeping, once the
// history has passed its end; until then it waits among the undecided.
func (k *liveKey) judge(s *liveStream, r *liveRegion) {
	if r.to >= s.now && !s.ended {
		k.undecided = append(k.undecided, r)
		return
	}
	r.decided = true
	if !k.candidate(s, r) {
		k.drop(r)
		return
	}
	k.toCompact(r)
}

// drop removes region r.
func (k *liveKey) drop(r *liveRegion) {
	r.gone = true
	if i := slices.Index(k.regions, r); i >= 0 {
		k.regions = slices.Delete(k.regions, i, i+1)
	}
}

// candidate reports whether the ended region r may still hold an
// unavailable stretch: whether some part of it inside a majority period,
// after the period's settling by the longest lease known for good, is at
// least opts.UnavailableWindow long with at least opts.Attempts refusals.
// Excuses only grow and the longest lease only lengthens the settling, so
// a region that has none never will.
func (k *liveKey) candidate(s *liveStream, r *liveRegion) bool {
	if len(r.fails) < s.opts.Attempts {
		return false
	}
	ok := false
	s.avail.each(r.from, r.to, func(_ int, p *upPeriod, to time.Duration) bool {
		lo := p.from
		if p.back {
			lo += k.longestKnownLease
		}
		a, b := max(r.from, lo), min(r.to, to)
		if i, j := r.count(a, b); b-a >= s.opts.UnavailableWindow && j-i >= s.opts.Attempts {
			ok = true
		}
		return !ok
	})
	return ok
}

// decide takes what the passing of time tells about k: a grant whose
// excuse waits for a cap ends no earlier than now (at its hold end, when
// that has passed), and the regions that ended before now are judged.
func (k *liveKey) decide(s *liveStream) {
	for i := 0; i < len(k.openGrants); i++ {
		if g := k.openGrants[i]; g.uncappedKnown && !g.capped {
			k.trySettle(s, g)
			if g.settled {
				i--
			}
		}
	}
	kept := k.undecided[:0]
	for _, r := range k.undecided {
		switch {
		case r.gone:
		case r.to >= s.now && !s.ended:
			kept = append(kept, r)
		default:
			r.decided = true
			if !k.candidate(s, r) {
				k.drop(r)
			} else {
				k.toCompact(r)
			}
		}
	}
	clear(k.undecided[len(kept):])
	k.undecided = kept
	k.compactAll(s)
}

// recertify cuts out of k's regions what became certain when k's longest
// lease known for good grew or a grant's lease of -1 ruled a reading out:
// the reach of the acquires of unknown outcome before each region and in
// it, and the clock faults' stretches; then it judges the ended regions
// again (a majority's settling grew too).
func (k *liveKey) recertify(s *liveStream) {
	type cut struct{ from, to time.Duration }
	var cuts []cut
	for _, r := range k.regions {
		if r.compact {
			continue
		}
		cuts = append(cuts, cut{r.from, r.reachBefore.certain(k)})
		for _, u := range r.unknownsIn {
			cuts = append(cuts, cut{u.invAt, u.certain(k)})
		}
		for _, sk := range s.faults.skews {
			if sk.from < r.to && sk.to+k.longestKnownLease > r.from {
				cuts = append(cuts, cut{sk.from, sk.to + k.longestKnownLease})
			}
		}
	}
	for _, c := range cuts {
		k.cover(s, c.from, c.to)
	}
	for _, r := range slices.Clone(k.regions) {
		switch {
		case r.compact && !k.mayFind(r):
			k.drop(r)
		case !r.decided || r.gone || r.compact:
		case !k.candidate(s, r):
			k.drop(r)
		default:
			k.toCompact(r)
		}
	}
}

// fail takes a refused acquire: into the open region, or the region that
// ended at its moment; one inside a certain excuse counts for nothing.
func (k *liveKey) fail(f liveFail) {
	if open := k.openRegion(); f.at >= open.from {
		open.fails = append(open.fails, f)
		return
	}
	for i := len(k.regions) - 2; i >= 0 && k.regions[i].to >= f.at; i-- {
		if r := k.regions[i]; r.from <= f.at {
			r.fails = append(r.fails, f)
			return
		}
	}
}
