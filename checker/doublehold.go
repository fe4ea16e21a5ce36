package checker

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// WellFormed is the checker "well-formed": it runs history.Validate. A
// malformed history is unknown, with one malformed-history anomaly naming
// the op (and its line) where the history stops being well-formed; it is
// never a verdict about the lock.
type WellFormed struct{}

var _ Checker = WellFormed{}

// Name returns "well-formed".
func (WellFormed) Name() string { return anomaly.CheckerWellFormed }

// Check validates h.
func (WellFormed) Check(ctx context.Context, h history.History) Result {
	start := time.Now()
	err := history.Validate(h)
	if err == nil {
		return Result{Name: anomaly.CheckerWellFormed, Verdict: Valid, Elapsed: time.Since(start), Anomalies: []Anomaly{}}
	}
	a := Anomaly{Kind: Malformed, Ops: []int{}, Message: err.Error()}
	var oe *history.OpError
	if errors.As(err, &oe) {
		a.Ops = []int{oe.Index}
		if oe.Index < len(h) {
			a.Key = h[oe.Index].Key
		}
	}
	return Result{Name: anomaly.CheckerWellFormed, Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{a},
		Note: "the history is malformed, so nothing can be said about the lock"}
}

// DoubleHoldChecker is the checker "double-hold". It finds two processes
// that believed they held the same lock at the same moment: two beliefs
// (docs/history.md §3, Analyze) of different processes on one key that
// overlap. Beliefs are half-open intervals [start, end), so a process that
// acquires exactly when the previous belief ended does not overlap it; a
// belief still open at the end of the history runs to its until, or on
// without end. Overlapping beliefs are found by a sweep over the beliefs
// sorted by start, O(n log n) plus one step per reported pair; each
// overlapping pair is reported once. The overlaps of one belief with the
// beliefs that started after it follow from that one belief (a stale holder
// overlapping every later grant): they are one anomaly, its first overlap,
// with the others as its followers (docs/history.md §4).
type DoubleHoldChecker struct{}

var _ Checker = DoubleHoldChecker{}

// Name returns "double-hold".
func (DoubleHoldChecker) Name() string { return anomaly.CheckerDoubleHold }

// Check finds overlapping beliefs in h.
func (c DoubleHoldChecker) Check(ctx context.Context, h history.History) Result {
	return runValidated(ctx, c.Name(), h, c.checkValid)
}

type procKey struct {
	proc int
	key  string
}

func (c DoubleHoldChecker) checkValid(ctx context.Context, h history.History) Result {
	return c.checkFacts(ctx, h, Analyze(h))
}

func (c DoubleHoldChecker) checkFacts(ctx context.Context, h history.History, f *Facts) Result {
	start := time.Now()
	perKey := map[string][]int{}
	for i := range f.Beliefs {
		if b := &f.Beliefs[i]; b.End > b.Start {
			k := f.Grants[b.Grant].Key
			perKey[k] = append(perKey[k], i)
		}
	}
	var anomalies []Anomaly
	for key, bs := range perKey {
		if ctx.Err() != nil {
			return Result{Name: c.Name(), Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: "timed out: " + ctx.Err().Error()}
		}
		slices.SortFunc(bs, func(a, b int) int {
			return cmp.Or(cmp.Compare(f.Beliefs[a].Start, f.Beliefs[b].Start), cmp.Compare(a, b))
		})
		active := &beliefHeap{f: f}
		group := map[int]int{} // the earlier belief -> its anomaly
		for _, b := range bs {
			for active.Len() > 0 && f.Beliefs[active.ids[0]].End <= f.Beliefs[b].Start {
				heap.Pop(active)
			}
			// the active beliefs in the order they started, so that each
			// belief's first overlap is its cause's anomaly
			earlier := slices.Clone(active.ids)
			slices.SortFunc(earlier, func(x, y int) int {
				return cmp.Or(cmp.Compare(f.Beliefs[x].Start, f.Beliefs[y].Start), cmp.Compare(x, y))
			})
			for _, a := range earlier {
				if f.Grants[a].Process == f.Grants[b].Process {
					continue
				}
				anomalies = followCause(anomalies, group, a, doubleHold(h, f, key, a, b))
			}
			heap.Push(active, b)
		}
	}
	return finish(c.Name(), start, anomalies, "")
}

// doubleHold describes the overlap of an earlier belief a with b.
func doubleHold(h history.History, f *Facts, key string, a, b int) Anomaly {
	ba, bb := &f.Beliefs[a], &f.Beliefs[b]
	ga, gb := &f.Grants[a], &f.Grants[b]
	ops := []int{ga.OK, gb.OK}
	for _, e := range []int{ba.EndOp, bb.EndOp} {
		if e >= 0 && !slices.Contains(ops, e) {
			ops = append(ops, e)
		}
	}
	msg := fmt.Sprintf("%s acquired %s at %s while %s held it since %s", worker(h[gb.OK]), key, secs(bb.Start), worker(h[ga.OK]), secs(ba.Start))
	if ba.Until != 0 {
		msg += ", valid until " + secs(ba.Until)
	}
	switch ba.Reason {
	case EndRelease:
		msg += fmt.Sprintf(", and kept it until its release at %s", secs(ba.End))
	case EndLeaseLost:
		msg += fmt.Sprintf(", and kept it until it learned at %s that its lease was lost", secs(ba.End))
	case EndCrash:
		msg += fmt.Sprintf(", and kept it until its process crashed at %s", secs(ba.End))
	case EndReacquire:
		msg += fmt.Sprintf(", and kept it until it acquired it again at %s", secs(ba.End))
	case EndOpen:
		if ba.Until == 0 {
			msg += ", and never released it"
		} else {
			msg += ", and never released it before then"
		}
	}
	return Anomaly{Kind: DoubleHold, Key: key, Ops: ops, Message: msg}
}

// beliefHeap is a min-heap of belief indexes by end.
type beliefHeap struct {
	f   *Facts
	ids []int
}

func (h beliefHeap) Len() int           { return len(h.ids) }
func (h beliefHeap) Less(i, j int) bool { return h.f.Beliefs[h.ids[i]].End < h.f.Beliefs[h.ids[j]].End }
func (h beliefHeap) Swap(i, j int)      { h.ids[i], h.ids[j] = h.ids[j], h.ids[i] }
func (h *beliefHeap) Push(x any)        { h.ids = append(h.ids, x.(int)) }
func (h *beliefHeap) Pop() any {
	x := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return x
}
