package checker

import (
	"context"
	"fmt"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// ResourceChecker is the checker "resource". It reads the protected
// resource's log out of the history (the write and read ops) and finds
// stale-write and lost-update anomalies, only where the history proves them
// (docs/history.md §4.2).
//
// A write is accepted when its completion is ok, rejected when it is fail
// (a fenced resource refused it), and of unknown outcome when it is info or
// never completed. An accepted write took effect at `applied` where the
// history gives it, else somewhere between its invoke and its completion.
// Writes are ordered only where that is proved: by time (one's interval ends
// before the other's begins), and by reads of a value that exactly one write
// of the key may have written (the read proves the write was applied before
// the read returned, and after every write applied before the read was
// invoked). hi(w) is the end of w's interval tightened by the reads of its
// value, after(w) the latest of its start and the invokes of those reads; w1
// is provably applied before w2 when hi(w1) < after(w2).
//
// stale-write: the resource provably applied a write of an older grant
// after a write of a newer one (lease order, Facts.Older: no reading of the
// lease model lets the newer grant take effect first; tokens play no part,
// and two grants with equal tokens are two grants). Each stale write is
// reported once, against a write of a newer grant provably applied before
// it; the stale writes of one grant follow from its one stale lease and are
// grouped behind the first (Anomaly.Follows).
//
// lost-update: each write of the workload writes the value it read plus one,
// so after n acknowledged (ok) writes of a key the register must hold at
// least n. The possible final values are those of the accepted writes that no
// other accepted write is provably applied after (or, where an ok read was
// invoked after every accepted write was applied, that of the last such read
// to return), and those of the writes of unknown outcome. The key has lost
// an update when every possible final value is known and below n.
//
// It reads the history op by op (docs/history.md §6, resourceStream): a
// write leaves memory once it can no longer change any finding, and what
// it leaves behind is a few summaries per key.
type ResourceChecker struct {
	// Drift is the relative clock drift the lease order allows, in [0, 1)
	// (Options.Drift, except that here zero means no drift; Checkers fills
	// in DefaultDrift).
	Drift float64
}

var _ Checker = ResourceChecker{}

// Name returns "resource".
func (ResourceChecker) Name() string { return anomaly.CheckerResource }

// Check finds stale writes and lost updates in h.
func (c ResourceChecker) Check(ctx context.Context, h history.History) Result {
	return runValidated(ctx, c.Name(), h, c.checkValid)
}

func (c ResourceChecker) checkValid(ctx context.Context, h history.History) Result {
	return c.checkHolds(ctx, h, followHistory(h))
}

// checkHolds reads h, and its grants, their Later ops, crashes and client
// closes from the Follower's events over h.
func (c ResourceChecker) checkHolds(ctx context.Context, h history.History, holds []HoldEvent) Result {
	rs := newResourceStream(c.Drift)
	feedHoldsFirst(h, holds, rs.add, rs.hold)
	return rs.result(ctx, c.Name())
}

// applyText says when a write took effect, from its apply interval [lo,
// hi] and whether `applied` gave it: "at 1.234s" or "between 1.2s and
// 1.3s".
func applyText(lo, hi time.Duration, exact bool) string {
	if exact || lo == hi {
		return "at " + secs(lo)
	}
	return fmt.Sprintf("between %s and %s", secs(lo), secs(hi))
}
