// resource_messages.go holds the resource stream's findings at the end of
// the history: the stale writes and the lost update of each key, worded as
// the check over the whole history words them.

package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// staleWrite describes the stale write old, applied after nw, whose grant
// is newer (as the check over the whole history words it).
func (v *resView) staleWrite(old, nw *resWrite) Anomaly {
	og, ng := old.grant, nw.grant
	ow, nwk := worker(history.Op{Client: old.client}), worker(history.Op{Client: nw.client})
	msg := fmt.Sprintf("%s wrote %s %s with the lease it took at %s, after %s (lease from %s, asked at %s) had written %s",
		ow, v.k.name, applyText(old.lo, old.hi, old.exact), secs(og.ret), nwk, secs(ng.ret), secs(ng.call), applyText(nw.lo, nw.hi, nw.exact))
	if og.okIndex > ng.invoke {
		// the acquires overlapped: the lease model orders them
		msg += fmt.Sprintf("; %s's lease could not have ended before %s, after %s's grant returned at %s, so %s's grant came first",
			nwk, secs(ng.holdEnd(og.okIndex, v.s.drift)), ow, secs(og.ret), ow)
	}
	return Anomaly{Kind: StaleWrite, Key: v.k.name, Ops: []int{old.done, nw.done, og.okIndex, ng.okIndex}, Message: msg}
}

// judge returns the key's anomalies at the end: its stale writes, each
// stale grant's behind its first, and its lost update.
func (k *resKey) judge(s *resourceStream) []Anomaly {
	v := k.view(s, Forever, Forever, true)
	type stale struct {
		after        time.Duration
		order, cause int
		a            Anomaly
	}
	var found []stale
	for _, f := range k.findings {
		after, a := f.afterIfShared, f.ifShared
		if f.valueUnique {
			after, a = f.afterIfUnique, f.ifUnique
		}
		if a != nil {
			found = append(found, stale{after, f.order, f.cause, *a})
		}
	}
	for _, o := range k.writes {
		if o.grant == nil {
			continue
		}
		if nw, _ := v.decide(o, resState{o.hiMin, o.afterMax}); nw != nil {
			found = append(found, stale{o.afterMax, o.order, o.grant.okIndex, v.staleWrite(o, nw)})
		}
	}
	slices.SortFunc(found, func(a, b stale) int {
		if c := cmp.Compare(a.after, b.after); c != 0 {
			return c
		}
		return a.order - b.order
	})
	var out []Anomaly
	group := map[int]int{} // the stale grant's ok -> its anomaly in out
	for _, f := range found {
		out = followCause(out, group, f.cause, f.a)
	}
	if a, ok := k.lostUpdate(); ok {
		out = append(out, a)
	}
	return out
}

// lostUpdate is §4.2's lost-update rule over the live writes at the end:
// a retired write is never a possible final value, nor the largest hi nor
// one of the two largest afters.
func (k *resKey) lostUpdate() (Anomaly, bool) {
	ws := k.writes
	// the two largest afters, to find for each write the largest other one
	top1, top2, top1i := never, never, -1
	maxHi := never
	for i, w := range ws {
		if a := w.afterMax; a > top1 {
			top2, top1, top1i = top1, a, i
		} else if a > top2 {
			top2 = a
		}
		maxHi = max(maxHi, w.hiMin)
	}
	best, bestOp, how := int64(math.MinInt64), -1, ""
	consider := func(v int64, op int, text string) {
		if v > best {
			best, bestOp, how = v, op, text
		}
	}
	if finals := k.finals(maxHi); len(finals) > 0 {
		for _, r := range finals {
			if !r.hasVal {
				return Anomaly{}, false // the final value is not known
			}
			consider(r.value, r.done, fmt.Sprintf("%s read %d at %s, after every accepted write", worker(history.Op{Client: r.client}), r.value, secs(r.ret)))
		}
	} else {
		for i, w := range ws {
			other := top1
			if i == top1i {
				other = top2
			}
			if w.hiMin < other {
				continue // another accepted write was provably applied after it
			}
			if !w.hasVal {
				return Anomaly{}, false
			}
			consider(w.value, w.done, fmt.Sprintf("%s's write of %d, applied %s, may have been the last", worker(history.Op{Client: w.client}), w.value, applyText(w.lo, w.hi, w.exact)))
		}
	}
	if k.unknownWrites.noValue {
		return Anomaly{}, false
	}
	if u := k.unknownWrites; u.has {
		consider(u.best, u.invoke, fmt.Sprintf("%s's write of %d, of unknown outcome, may have been applied last", worker(history.Op{Client: u.client}), u.best))
	}
	if best >= k.accepted || bestOp < 0 {
		return Anomaly{}, false
	}
	return Anomaly{Kind: LostUpdate, Key: k.name, Ops: []int{bestOp},
		Message: fmt.Sprintf("%s ended at %d at most after %d acknowledged increments (%s)", k.name, best, k.accepted, how)}, true
}

// finals returns the ok reads invoked after maxHi that returned last (all
// of them, on a tie), in the order of their returns.
func (k *resKey) finals(maxHi time.Duration) []resRead {
	last := never
	var out []resRead
	for _, r := range k.lasts {
		if r.call <= maxHi {
			continue
		}
		switch {
		case r.ret > last:
			last, out = r.ret, append(out[:0], r)
		case r.ret == last:
			out = append(out, r)
		}
	}
	return out
}
