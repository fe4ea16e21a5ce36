package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

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
	return c.checkFacts(ctx, h, Analyze(h))
}

// tokenGrants returns each key's grants of fencing tokens, in the order of
// their oks.
func tokenGrants(f *Facts) map[string][]tokenGrant {
	perKey := map[string][]tokenGrant{}
	for i := range f.Grants {
		g := &f.Grants[i]
		held := g.Token
		if held != 0 {
			perKey[g.Key] = append(perKey[g.Key], tokenGrant{invoke: g.Invoke, ok: g.OK, token: held})
		}
		for _, r := range g.Renewals {
			if r.Token != 0 && r.Token != held {
				held = r.Token
				perKey[g.Key] = append(perKey[g.Key], tokenGrant{invoke: r.Invoke, ok: r.OK, token: held, renewal: true})
			}
		}
	}
	for _, gs := range perKey {
		slices.SortFunc(gs, func(a, b tokenGrant) int { return cmp.Compare(a.ok, b.ok) })
	}
	return perKey
}

func (c TokenChecker) checkFacts(ctx context.Context, h history.History, f *Facts) Result {
	start := time.Now()
	if ctx.Err() != nil {
		return Result{Name: c.Name(), Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: "timed out: " + ctx.Err().Error()}
	}
	var anomalies []Anomaly
	follow := func(group map[int]int, cause int, a Anomaly) { anomalies = followCause(anomalies, group, cause, a) }
	for key, as := range tokenGrants(f) {
		first := map[uint64]tokenGrant{}
		reuse := map[int]int{} // the first grant's ok -> its anomaly
		for _, a := range as { // in ok order
			if f, seen := first[a.token]; seen {
				follow(reuse, f.ok, Anomaly{Kind: TokenReuse, Key: key, Ops: []int{f.ok, a.ok},
					Message: fmt.Sprintf("%s %s %s with token %d at %s, and %s %s it with the same token at %s",
						worker(h[f.ok]), f.verb(), key, a.token, secs(h[f.ok].Time), worker(h[a.ok]), a.verb(), secs(h[a.ok].Time))})
				continue
			}
			first[a.token] = a
		}
		byInvoke := slices.Clone(as)
		slices.SortFunc(byInvoke, func(a, b tokenGrant) int { return cmp.Compare(a.invoke, b.invoke) })
		// as is in ok order; walk it as grants finish before each invoke,
		// keeping the highest token finished so far.
		next, best := 0, -1
		group := map[int]int{} // the higher grant's ok -> its anomaly
		for _, b := range byInvoke {
			for next < len(as) && as[next].ok < b.invoke {
				if best < 0 || as[next].token > as[best].token {
					best = next
				}
				next++
			}
			if best >= 0 && b.token < as[best].token {
				a := as[best]
				follow(group, a.ok, Anomaly{Kind: TokenRegression, Key: key, Ops: []int{a.ok, b.ok},
					Message: fmt.Sprintf("%s %s %s with token %d at %s (asked at %s), after %s had %s it with token %d at %s",
						worker(h[b.ok]), b.verb(), key, b.token, secs(h[b.ok].Time), secs(h[b.invoke].Time), worker(h[a.ok]), a.verb(), a.token, secs(h[a.ok].Time))})
			}
		}
	}
	return finish(c.Name(), start, anomalies, "")
}
