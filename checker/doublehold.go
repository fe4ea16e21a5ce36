package checker

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// WellFormed is the checker "well-formed": it runs history.Validate. A
// malformed history is unknown, with one malformed-history anomaly naming
// the op (and its line) where the history stops being well-formed; it is
// never a verdict about the lock.
type WellFormed struct{}

var _ Checker = WellFormed{}

// Name returns "well-formed".
func (WellFormed) Name() string { return "well-formed" }

// Check validates h.
func (WellFormed) Check(ctx context.Context, h history.History) Result {
	start := time.Now()
	err := history.Validate(h)
	if err == nil {
		return Result{Name: "well-formed", Verdict: Valid, Elapsed: time.Since(start), Anomalies: []Anomaly{}}
	}
	a := Anomaly{Kind: Malformed, Ops: []int{}, Message: err.Error()}
	var oe *history.OpError
	if errors.As(err, &oe) {
		a.Ops = []int{oe.Index}
		if oe.Index < len(h) {
			a.Key = h[oe.Index].Key
		}
	}
	return Result{Name: "well-formed", Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{a},
		Note: "the history is malformed, so nothing can be said about the lock"}
}

// DoubleHoldChecker is the checker "double-hold". It finds two processes
// that believed they held the same lock at the same moment.
//
// A process's belief in a lock starts at its acquire's ok and ends at the
// earliest of: the invoke of its release of that key; the acquire ok's
// `until` (the client's own validity end, where the algorithm has one;
// a renew ok with `until` moves it); a lease-lost op of that process for that
// key; the process's crash (an info completion of any of its ops ends all
// its beliefs at that op's time); its next acquire ok of the same key; the
// end of the history. Beliefs are half-open intervals [start, end), so a
// process that acquires exactly when the previous belief ended does not
// overlap it. Overlapping beliefs of different processes on one key are
// found by a sweep over the beliefs sorted by start, O(n log n) plus one
// step per reported pair; each overlapping pair is reported once.
type DoubleHoldChecker struct{}

var _ Checker = DoubleHoldChecker{}

// Name returns "double-hold".
func (DoubleHoldChecker) Name() string { return "double-hold" }

// Check finds overlapping beliefs in h.
func (c DoubleHoldChecker) Check(ctx context.Context, h history.History) Result {
	return runValidated(ctx, c.Name(), h, c.checkValid)
}

type endReason uint8

const (
	endHistory endReason = iota
	endRelease
	endUntil
	endLeaseLost
	endCrash
	endReacquire
)

type belief struct {
	proc     int
	key      string
	startOp  int
	start    time.Duration
	until    time.Duration // 0: none
	end      time.Duration // the close, before until is applied
	endOp    int           // -1 for the end of the history
	reason   endReason
	effEnd   time.Duration // min(end, until)
	effUntil bool          // the effective end is until
}

type procKey struct {
	proc int
	key  string
}

func (c DoubleHoldChecker) checkValid(ctx context.Context, h history.History) Result {
	start := time.Now()
	open := map[procKey]*belief{}
	byProc := map[int][]*belief{} // open beliefs per process, for crashes
	var all []*belief
	closeB := func(b *belief, at time.Duration, op int, why endReason) {
		b.end, b.endOp, b.reason = at, op, why
		delete(open, procKey{b.proc, b.key})
		ps := byProc[b.proc]
		for i, x := range ps {
			if x == b {
				byProc[b.proc] = slices.Delete(ps, i, i+1)
				break
			}
		}
	}
	for i := range h {
		if i&0xffff == 0 && ctx.Err() != nil {
			return Result{Name: c.Name(), Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: "timed out: " + ctx.Err().Error()}
		}
		op := &h[i]
		if op.IsNemesis() {
			continue
		}
		pk := procKey{op.Process, op.Key}
		switch {
		case op.Type == history.Info:
			for _, b := range slices.Clone(byProc[op.Process]) {
				closeB(b, op.Time, i, endCrash)
			}
		case op.F == history.FAcquire && op.Type == history.OK:
			if b := open[pk]; b != nil {
				closeB(b, op.Time, i, endReacquire)
			}
			b := &belief{proc: op.Process, key: op.Key, startOp: i, start: op.Time, until: op.Until, endOp: -1}
			open[pk] = b
			byProc[op.Process] = append(byProc[op.Process], b)
			all = append(all, b)
		case op.F == history.FRenew && op.Type == history.OK && op.Until != 0:
			if b := open[pk]; b != nil {
				b.until = op.Until
			}
		case op.F == history.FRelease && op.Type == history.Invoke:
			if b := open[pk]; b != nil {
				closeB(b, op.Time, i, endRelease)
			}
		case op.F == history.FLeaseLost && op.Type == history.Invoke:
			if b := open[pk]; b != nil {
				closeB(b, op.Time, i, endLeaseLost)
			}
		}
	}
	var last time.Duration
	if len(h) > 0 {
		last = h[len(h)-1].Time
	}
	for _, b := range open {
		b.end, b.endOp, b.reason = last, -1, endHistory
	}
	perKey := map[string][]*belief{}
	for _, b := range all {
		b.effEnd = b.end
		if b.until != 0 && b.until < b.end {
			b.effEnd, b.effUntil = b.until, true
		}
		if b.effEnd > b.start {
			perKey[b.key] = append(perKey[b.key], b)
		}
	}
	var anomalies []Anomaly
	for key, bs := range perKey {
		slices.SortFunc(bs, func(a, b *belief) int {
			return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.startOp, b.startOp))
		})
		active := &beliefHeap{}
		for _, b := range bs {
			for active.Len() > 0 && (*active)[0].effEnd <= b.start {
				heap.Pop(active)
			}
			for _, a := range *active {
				if a.proc != b.proc {
					anomalies = append(anomalies, doubleHold(h, key, a, b))
				}
			}
			heap.Push(active, b)
		}
	}
	return finish(c.Name(), start, anomalies, "")
}

// doubleHold describes the overlap of an earlier belief a with b.
func doubleHold(h history.History, key string, a, b *belief) Anomaly {
	ops := []int{a.startOp, b.startOp}
	for _, e := range []int{a.endOp, b.endOp} {
		if e >= 0 && !slices.Contains(ops, e) {
			ops = append(ops, e)
		}
	}
	ao, bo := h[a.startOp], h[b.startOp]
	msg := fmt.Sprintf("%s acquired %s at %s while %s held it since %s", worker(bo), key, secs(b.start), worker(ao), secs(a.start))
	if a.until != 0 {
		msg += ", valid until " + secs(a.until)
	}
	if !a.effUntil {
		switch a.reason {
		case endRelease:
			msg += fmt.Sprintf(", and kept it until its release at %s", secs(a.end))
		case endLeaseLost:
			msg += fmt.Sprintf(", and kept it until it learned at %s that its lease was lost", secs(a.end))
		case endCrash:
			msg += fmt.Sprintf(", and kept it until its process crashed at %s", secs(a.end))
		case endReacquire:
			msg += fmt.Sprintf(", and kept it until it acquired it again at %s", secs(a.end))
		case endHistory:
			msg += ", and never released it"
		}
	}
	return Anomaly{Kind: DoubleHold, Key: key, Ops: ops, Message: msg}
}

type beliefHeap []*belief

func (h beliefHeap) Len() int           { return len(h) }
func (h beliefHeap) Less(i, j int) bool { return h[i].effEnd < h[j].effEnd }
func (h beliefHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *beliefHeap) Push(x any)        { *h = append(*h, x.(*belief)) }
func (h *beliefHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
