package checker

import (
	"context"
	"errors"
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
	key := ""
	var oe *history.OpError
	if errors.As(err, &oe) && oe.Index < len(h) {
		key = h[oe.Index].Key
	}
	return malformedResult(err, key, time.Since(start))
}

// malformedResult is the well-formed checker's unknown verdict on a
// history that stops being well-formed with err (an *history.OpError names
// the op, of key key).
func malformedResult(err error, key string, elapsed time.Duration) Result {
	a := Anomaly{Kind: Malformed, Ops: []int{}, Key: key, Message: err.Error()}
	var oe *history.OpError
	if errors.As(err, &oe) {
		a.Ops = []int{oe.Index}
	}
	return Result{Name: anomaly.CheckerWellFormed, Verdict: Unknown, Elapsed: elapsed, Anomalies: []Anomaly{a},
		Note: "the history is malformed, so nothing can be said about the lock"}
}

// DoubleHoldChecker is the checker "double-hold". It finds two processes
// that believed they held the same lock at the same moment: two beliefs
// (docs/history.md §3, Analyze) of different processes on one key that
// overlap. Beliefs are half-open intervals [start, end), so a process that
// acquires exactly when the previous belief ended does not overlap it; a
// belief still open at the end of the history runs to its until, or on
// without end. It reads the history op by op (docs/history.md §6): beliefs
// start in the order of their grants' oks and end no later than the op that
// ends them, so a belief that starts can overlap only the beliefs of its key
// still open, and it holds only those and the overlaps found; each
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
	return c.checkHolds(ctx, h, followHistory(h))
}

// checkHolds reads the beliefs from the Follower's events over h.
func (c DoubleHoldChecker) checkHolds(ctx context.Context, _ history.History, holds []HoldEvent) Result {
	hs := newHoldStream()
	for i := range holds {
		hs.hold(&holds[i])
	}
	return hs.result(ctx, c.Name())
}
