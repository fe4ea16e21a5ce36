package checker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// TokenChecker is the checker "fencing-tokens". It looks at the acquisitions
// (acquire oks) that carry a nonzero fencing token; keys and ops without
// tokens are skipped.
//
// token-reuse: two distinct acquisitions of one key got the same token. Each
// acquisition after the first with a given token is reported once, against
// the first.
//
// token-regression: an acquisition that began (its invoke) after another
// acquisition of the same key had finished (its ok) got a lower token. Each
// such acquisition is reported once, against the highest token finished
// before it began; later regressions against the same acquisition are
// counted in that anomaly's message rather than listed. An equal token is
// token-reuse, not a regression.
type TokenChecker struct{}

var _ Checker = TokenChecker{}

// Name returns "fencing-tokens".
func (TokenChecker) Name() string { return "fencing-tokens" }

// Check finds reused and regressing fencing tokens in h.
func (c TokenChecker) Check(ctx context.Context, h history.History) Result {
	return runValidated(ctx, c.Name(), h, c.checkValid)
}

type acquisition struct {
	invoke, ok int
	token      uint64
}

func (c TokenChecker) checkValid(ctx context.Context, h history.History) Result {
	return c.checkFacts(ctx, h, Analyze(h))
}

func (c TokenChecker) checkFacts(ctx context.Context, h history.History, f *Facts) Result {
	start := time.Now()
	if ctx.Err() != nil {
		return Result{Name: c.Name(), Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: "timed out: " + ctx.Err().Error()}
	}
	perKey := map[string][]acquisition{}
	for i := range f.Grants {
		if g := &f.Grants[i]; g.Token != 0 {
			perKey[g.Key] = append(perKey[g.Key], acquisition{invoke: g.Invoke, ok: g.OK, token: g.Token})
		}
	}
	var anomalies []Anomaly
	more := map[int]int{} // anomaly -> later regressions against the same acquisition
	for key, as := range perKey {
		first := map[uint64]acquisition{}
		for _, a := range as { // in ok order
			if f, seen := first[a.token]; seen {
				anomalies = append(anomalies, Anomaly{Kind: TokenReuse, Key: key, Ops: []int{f.ok, a.ok},
					Message: fmt.Sprintf("%s and %s both acquired %s with token %d (at %s and %s)",
						worker(h[f.ok]), worker(h[a.ok]), key, a.token, secs(h[f.ok].Time), secs(h[a.ok].Time))})
				continue
			}
			first[a.token] = a
		}
		byInvoke := slices.Clone(as)
		slices.SortFunc(byInvoke, func(a, b acquisition) int { return cmp.Compare(a.invoke, b.invoke) })
		// as is in ok order; walk it as acquisitions finish before each
		// invoke, keeping the highest token finished so far.
		next, best := 0, -1
		group := map[int]int{} // the higher acquisition's ok -> its anomaly
		for _, b := range byInvoke {
			for next < len(as) && as[next].ok < b.invoke {
				if best < 0 || as[next].token > as[best].token {
					best = next
				}
				next++
			}
			if best >= 0 && b.token < as[best].token {
				a := as[best]
				if g, ok := group[a.ok]; ok {
					more[g]++
					continue
				}
				group[a.ok] = len(anomalies)
				more[len(anomalies)] = 0
				anomalies = append(anomalies, Anomaly{Kind: TokenRegression, Key: key, Ops: []int{a.ok, b.ok},
					Message: fmt.Sprintf("%s acquired %s with token %d at %s (asked at %s), after %s's acquisition with token %d had finished at %s",
						worker(h[b.ok]), key, b.token, secs(h[b.ok].Time), secs(h[b.invoke].Time), worker(h[a.ok]), a.token, secs(h[a.ok].Time))})
			}
		}
	}
	for i, n := range more {
		if n > 0 {
			anomalies[i].Message += fmt.Sprintf("; %d later acquisitions got tokens below it too", n)
		}
	}
	return finish(c.Name(), start, anomalies, "")
}
