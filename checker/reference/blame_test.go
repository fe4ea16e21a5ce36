package reference_test

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/checker/reference"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// blameHistories is how many generated histories TestBlameIsShownByItsOps
// reads (REFERENCE_HISTORIES sets it too).
const blameHistories = 5000

// TestBlameIsShownByItsOps checks the sentence of every early-grant that
// names the lease it overran (docs/history.md §4.1): "in no order could o
// take effect before g, nor after g's hold ended" must be shown by the ops
// it rests on. So the history cut to o's completion (later completions left
// out: those ops are of unknown outcome there), holding only the key's ops
// of o's and g's workers and of the workers whose grants returned before g
// was invoked, must still be invalid for the reference: the named ops alone
// prove the early grant.
func TestBlameIsShownByItsOps(t *testing.T) {
	n := blameHistories
	if s := os.Getenv("REFERENCE_HISTORIES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatalf("REFERENCE_HISTORIES=%q: %v", s, err)
		}
	}
	named := 0
	for seed := uint64(0); seed < uint64(n); seed++ {
		h := reference.Generate(rand.New(rand.NewPCG(seed, 0xb1a3)), reference.GenOptions{Ties: seed%10 == 9, Kept: seed%4 == 3})
		drift := drifts[seed%uint64(len(drifts))]
		for _, r := range checker.Check(context.Background(), h, checker.Options{Drift: drift.opts}) {
			for _, a := range r.Anomalies {
				if a.Kind != checker.EarlyGrant || len(a.Ops) != 2 {
					continue
				}
				named++
				cut := blameCut(h, a.Ops[0], a.Ops[1])
				ref, err := reference.Check(cut, drift.ref)
				if err != nil {
					t.Fatalf("seed %d: the cut history is refused: %v", seed, err)
				}
				if ref.VerdictOf(anomaly.CheckerLinearizability) != checker.Invalid {
					t.Fatalf("seed %d: %s %v: %s\nbut the ops it rests on are valid for the reference:\n%s", seed, a.Kind, a.Ops, a.Message, jsonl(cut))
				}
			}
		}
	}
	if named == 0 {
		t.Fatal("no early-grant named the lease it overran")
	}
	t.Logf("%d early-grants named the lease they overran", named)
}

// blameCut is h up to op o (the early grant's ok), with only the ops of the
// key of o from o's and g's workers (g: the overrun grant's ok) and of the
// workers with a grant of the key that returned before g's acquire was
// invoked; each completion after o left out, and each op that failed left
// out whole.
func blameCut(h history.History, o, g int) history.History {
	key := h[o].Key
	gInv := -1
	for i := g - 1; i >= 0; i-- {
		if h[i].Process == h[g].Process && h[i].Type == history.Invoke {
			gInv = i
			break
		}
	}
	workers := []int{h[o].Client, h[g].Client}
	for i := 0; i < gInv; i++ {
		if op := h[i]; !op.IsNemesis() && op.F == history.FAcquire && op.Type == history.OK && op.Key == key && !slices.Contains(workers, op.Client) {
			workers = append(workers, op.Client)
		}
	}
	failed := map[int]bool{} // the invokes and completions of ops that failed: left out even while outstanding (§4.1)
	pending := map[int]int{}
	for i, op := range h {
		if op.IsNemesis() {
			continue
		}
		if op.Type == history.Invoke {
			pending[op.Process] = i
		} else if op.Type == history.Fail {
			failed[pending[op.Process]], failed[i] = true, true
		}
	}
	var cut history.History
	for i := 0; i <= o; i++ {
		op := h[i]
		if op.IsNemesis() || !slices.Contains(workers, op.Client) || failed[i] {
			continue
		}
		// ops of other keys are kept too: a crash on any key ends the
		// process and may close its client
		op.Index = len(cut)
		cut = append(cut, op)
	}
	return cut
}
