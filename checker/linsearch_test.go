package checker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestOrderSearchAgreesWithPorcupine holds the lease model's search
// (orderSearch) to porcupine run with the same model over the same ops, on
// every piece of synthetic histories rich in ops of unknown outcome, valid
// and with each kind of anomaly planted, and on the sets the culprit's
// search judges (each piece as it stood at some completion, the ops
// outstanding there taken as of unknown outcome).
func TestOrderSearchAgreesWithPorcupine(t *testing.T) {
	compared, invalid, held := 0, 0, 0
	for seed := uint64(0); seed < 16; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		opts := synth.Options{Workers: 2 + r.IntN(7), Keys: 1 + r.IntN(2), Ops: 600, TTL: time.Duration(3+r.IntN(30)) * time.Millisecond,
			InfoRate: 0.1 + 0.3*r.Float64(), Tokens: seed%2 == 0, Session: seed%3 == 1}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		variants := []history.History{h}
		for _, kind := range synth.Kinds {
			if bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, kind); err == nil {
				variants = append(variants, bad)
			}
		}
		for _, v := range variants {
			for _, p := range splitPieces(v, DefaultDrift) {
				if p.held != nil {
					held++
				}
				sets := [][]*lockOp{p.ops}
				for _, o := range p.ops {
					if o.done >= 0 && r.IntN(4) == 0 {
						sets = append(sets, upTo(p, int64(o.done)))
					}
				}
				for _, ops := range sets {
					want, _, timedOut := linearize(context.Background(), piece{key: p.key, ops: ops, held: p.held}, false)
					if timedOut {
						continue
					}
					got, undecided := decideOrder(context.Background(), p, ops)
					if undecided || got != want {
						t.Fatalf("seed %d, key %s, ops from %d: search %v (undecided %v), porcupine %v\n%s", seed, p.key, ops[0].invoke, got, undecided, want, pieceText(piece{key: p.key, ops: ops}))
					}
					compared++
					if !want {
						invalid++
					}
				}
			}
		}
	}
	if compared < 2000 || invalid < 40 || held < 50 {
		t.Fatalf("only %d sets compared, %d of them invalid, %d pieces starting from a hold", compared, invalid, held)
	}
	t.Logf("%d sets compared, %d invalid; %d pieces started from a hold", compared, invalid, held)
}

// TestHeldPoints checks where stored histories are cut: at held points
// for a waiting lock under steady contention, and not where an
// outstanding grant could have expired before the holder's grant
// returned (docs/history.md §4.1, "Cuts where the lock is held").
func TestHeldPoints(t *testing.T) {
	for _, tc := range []struct {
		name         string
		pieces, held int
		largest      int // the most ops in one piece
	}{
		{name: "held-point-waiting-lock", pieces: 7, held: 6, largest: 2},
		{name: "held-point-carried-grant-may-expire", pieces: 1, held: 0, largest: 4},
		{name: "held-point-early-grant", pieces: 8, held: 7, largest: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, err := history.ReadFile(filepath.Join("testdata", tc.name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			ps := splitPieces(h, DefaultDrift)
			held, largest := 0, 0
			var desc string
			for _, p := range ps {
				largest = max(largest, len(p.ops))
				if p.held != nil {
					held++
				}
				desc += fmt.Sprintf("\n  %d ops from op %d, held %v", len(p.ops), p.ops[0].invoke, p.held != nil)
			}
			if len(ps) != tc.pieces || held != tc.held || largest != tc.largest {
				t.Errorf("%d pieces, %d from a hold, the largest of %d ops; want %d, %d and %d:%s", len(ps), held, largest, tc.pieces, tc.held, tc.largest, desc)
			}
		})
	}
}
