package checker

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// liveHeld counts what a liveness stream holds: the refusals it keeps one
// by one and the regions it keeps compact.
func liveHeld(s *liveStream) (refusals, compact int) {
	for _, k := range s.keys {
		for _, r := range k.regions {
			refusals += len(r.fails)
			if r.compact {
				compact++
			}
		}
	}
	return refusals, compact
}

// TestLiveStreamHoldsLittle checks the liveness stream's bound
// (docs/history.md §6) on long histories of a lock that works, with
// acquires of unknown outcome and leases longer than the unavailable
// window, every node up throughout: at no moment does it keep more than a
// few hundred refusals one by one (those while the current holders hold
// their keys), however long the history, and it keeps a compact region
// only for an acquire of unknown outcome.
func TestLiveStreamHoldsLittle(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts synth.Options
	}{
		{"lease", synth.Options{Workers: 16, Keys: 4, Ops: 300_000, TTL: 3 * time.Second, InfoRate: 0.01, Tokens: true}},
		{"session", synth.Options{Workers: 4, Keys: 1, Ops: 300_000, TTL: 5 * time.Second, InfoRate: 0.02, Session: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := withHeader(synth.Generate(rand.New(rand.NewPCG(1, 1)), tc.opts))
			s := newLiveStream(LivenessOptions{})
			fol := NewFollower()
			var evs []HoldEvent
			most, unknown := 0, 0
			for i := range h {
				evs = fol.Add(&h[i], evs[:0])
				for j := range evs {
					s.hold(&evs[j])
				}
				s.add(&h[i])
				if h[i].F == history.FAcquire && h[i].Type == history.Info {
					unknown++
				}
				if i%1000 == 0 {
					n, _ := liveHeld(s)
					most = max(most, n)
				}
			}
			n, compact := liveHeld(s)
			if most > 1000 || compact > unknown {
				t.Fatalf("the stream kept up to %d refusals one by one (%d at the end) and %d compact regions, for %d acquires of unknown outcome in %d ops",
					most, n, compact, unknown, len(h))
			}
		})
	}
}
