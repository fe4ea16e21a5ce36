package checker

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// This file keeps the fencing-token check as it was before it read its
// history as a stream; TestTokenStreamAsBatch holds the streaming check to
// it.

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

// batchTokens is the fencing-token check as it was before it read its
// history as a stream: over the grants of tokens the shared definitions
// found (tokenGrants).
func batchTokens(ctx context.Context, h history.History, f *Facts) Result {
	c := TokenChecker{}
	start := time.Now()
	if ctx.Err() != nil {
		return Result{Name: c.Name(), Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: stopNote(ctx)}
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

// tokensAgree checks that the streaming fencing-token check of h gives the
// batch check's result.
func tokensAgree(t *testing.T, h history.History) {
	t.Helper()
	got := TokenChecker{}.checkValid(context.Background(), h)
	want := batchTokens(context.Background(), h, Analyze(h))
	got.Elapsed, want.Elapsed = 0, 0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("streaming check %+v\nbatch check %+v", got, want)
	}
}

// TestTokenStreamAsBatch holds the streaming fencing-token check to the
// batch one on every well-formed history stored in the repository and on
// synthetic histories, valid and with each kind of anomaly planted.
func TestTokenStreamAsBatch(t *testing.T) {
	for _, sh := range storedHistories(t) {
		t.Run(sh.name, func(t *testing.T) { tokensAgree(t, sh.h) })
	}
	for seed := uint64(0); seed < 24; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		opts := synth.Options{Workers: 1 + r.IntN(8), Keys: 1 + r.IntN(3), Ops: 2000, TTL: time.Duration(3+r.IntN(40)) * time.Millisecond,
			InfoRate: 0.04, Tokens: true, Session: seed%3 == 1}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		t.Run(fmt.Sprintf("synth-%d", seed), func(t *testing.T) { tokensAgree(t, h) })
		for _, k := range synth.Kinds {
			bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, k)
			if err != nil {
				continue
			}
			t.Run(fmt.Sprintf("synth-%d-%s", seed, k), func(t *testing.T) { tokensAgree(t, bad) })
		}
	}
}

// FuzzTokenStream widens TestTokenStreamAsBatch to any seed and shape of
// synthetic history, valid or with one anomaly planted.
func FuzzTokenStream(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(2), uint8(20), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, workers, keys, ttlMs, kind uint8) {
		opts := synth.Options{Workers: 1 + int(workers%10), Keys: 1 + int(keys%4), Ops: 800,
			TTL: time.Duration(3+int(ttlMs%60)) * time.Millisecond, InfoRate: 0.04, Tokens: true, Session: seed%3 == 0}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		tokensAgree(t, h)
		if bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, synth.Kinds[int(kind)%len(synth.Kinds)]); err == nil {
			tokensAgree(t, bad)
		}
	})
}
