package checker

import (
	"context"

	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// TokenChecker is the checker "fencing-tokens". It looks at the grants of
// fencing tokens: the acquisitions (acquire oks) that carry a nonzero token,
// and the renewals (renew oks) that hand out a new one (a nonzero token other
// than the one its grant held before it: pg-timeout's renewal moves its
// timestamp, which is its token); keys and ops without tokens are skipped
// (docs/history.md §4.3).
//
// token-reuse: two distinct grants of one key carry the same token. Each
// grant after the first with a given token is reported once, against the
// first; the reuses of one token are grouped behind the first of them.
//
// token-regression: a grant that began (its invoke) after another grant of
// the same key had finished (its ok) got a lower token. Each such grant is
// reported once, against the highest token finished before it began; the
// regressions against the same grant follow from its token and are grouped
// behind the first of them. An equal token is token-reuse, not a regression.
//
// It reads the history op by op (docs/history.md §6): a regression needs
// only the highest token returned before each invoke, but a reuse may
// repeat any earlier token, so it keeps the first grant of every distinct
// token of each key.
type TokenChecker struct{}

var _ Checker = TokenChecker{}

// Name returns "fencing-tokens".
func (TokenChecker) Name() string { return anomaly.CheckerFencingTokens }

// Check finds reused and regressing fencing tokens in h.
func (c TokenChecker) Check(ctx context.Context, h history.History) Result {
	return runValidated(ctx, c.Name(), h, c.checkValid)
}

// tokenGrant is a grant of a fencing token: an acquire ok, or a renew ok
// that handed out a new token.
type tokenGrant struct {
	invoke, ok int
	token      uint64
	renewal    bool
}

// verb says how g got its token.
func (g tokenGrant) verb() string {
	if g.renewal {
		return "renewed"
	}
	return "acquired"
}

func (c TokenChecker) checkValid(ctx context.Context, h history.History) Result {
	return c.checkHolds(ctx, h, followHistory(h))
}

// checkHolds reads h's invokes, and its grants and renewals from the
// Follower's events over h.
func (c TokenChecker) checkHolds(ctx context.Context, h history.History, holds []HoldEvent) Result {
	ts := newTokenStream()
	rest := feedFollowed(h, holds, ts.add, ts.hold)
	for i := range rest {
		ts.hold(&rest[i])
	}
	return ts.result(ctx, c.Name())
}
