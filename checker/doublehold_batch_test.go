package checker

import (
	"cmp"
	"container/heap"
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

// This file keeps the double-hold check as it was before it read its
// history as a stream; TestHoldStreamAsBatch holds the streaming check to
// it.

// batchDoubleHold is the double-hold check as it was before it read its
// history as a stream: a sweep over the beliefs the shared definitions
// found (Analyze), sorted by start.
func batchDoubleHold(ctx context.Context, h history.History, f *Facts) Result {
	c := DoubleHoldChecker{}
	start := time.Now()
	perKey := map[string][]int{}
	for i := range f.Beliefs {
		if b := &f.Beliefs[i]; b.End > b.Start {
			k := f.Grants[b.Grant].Key
			perKey[k] = append(perKey[k], i)
		}
	}
	var anomalies []Anomaly
	for key, bs := range perKey {
		if ctx.Err() != nil {
			return Result{Name: c.Name(), Verdict: Unknown, Elapsed: time.Since(start), Anomalies: []Anomaly{}, Note: stopNote(ctx)}
		}
		slices.SortFunc(bs, func(a, b int) int {
			return cmp.Or(cmp.Compare(f.Beliefs[a].Start, f.Beliefs[b].Start), cmp.Compare(a, b))
		})
		active := &beliefHeap{f: f}
		group := map[int]int{} // the earlier belief -> its anomaly
		for _, b := range bs {
			for active.Len() > 0 && f.Beliefs[active.ids[0]].End <= f.Beliefs[b].Start {
				heap.Pop(active)
			}
			// the active beliefs in the order they started, so that each
			// belief's first overlap is its cause's anomaly
			earlier := slices.Clone(active.ids)
			slices.SortFunc(earlier, func(x, y int) int {
				return cmp.Or(cmp.Compare(f.Beliefs[x].Start, f.Beliefs[y].Start), cmp.Compare(x, y))
			})
			for _, a := range earlier {
				if f.Grants[a].Process == f.Grants[b].Process {
					continue
				}
				anomalies = followCause(anomalies, group, a, doubleHold(h, f, key, a, b))
			}
			heap.Push(active, b)
		}
	}
	return finish(c.Name(), start, anomalies, "")
}

// doubleHold describes the overlap of an earlier belief a with b.
func doubleHold(h history.History, f *Facts, key string, a, b int) Anomaly {
	ba, bb := &f.Beliefs[a], &f.Beliefs[b]
	ga, gb := &f.Grants[a], &f.Grants[b]
	ops := []int{ga.OK, gb.OK}
	for _, e := range []int{ba.EndOp, bb.EndOp} {
		if e >= 0 && !slices.Contains(ops, e) {
			ops = append(ops, e)
		}
	}
	msg := fmt.Sprintf("%s acquired %s at %s while %s held it since %s", worker(h[gb.OK]), key, secs(bb.Start), worker(h[ga.OK]), secs(ba.Start))
	if ba.Until != 0 {
		msg += ", valid until " + secs(ba.Until)
	}
	switch ba.Reason {
	case EndRelease:
		msg += fmt.Sprintf(", and kept it until its release at %s", secs(ba.End))
	case EndLeaseLost:
		msg += fmt.Sprintf(", and kept it until it learned at %s that its lease was lost", secs(ba.End))
	case EndCrash:
		msg += fmt.Sprintf(", and kept it until its process crashed at %s", secs(ba.End))
	case EndReacquire:
		msg += fmt.Sprintf(", and kept it until it acquired it again at %s", secs(ba.End))
	case EndOpen:
		if ba.Until == 0 {
			msg += ", and never released it"
		} else {
			msg += ", and never released it before then"
		}
	}
	return Anomaly{Kind: DoubleHold, Key: key, Ops: ops, Message: msg}
}

// beliefHeap is a min-heap of belief indexes by end.
type beliefHeap struct {
	f   *Facts
	ids []int
}

func (h beliefHeap) Len() int           { return len(h.ids) }
func (h beliefHeap) Less(i, j int) bool { return h.f.Beliefs[h.ids[i]].End < h.f.Beliefs[h.ids[j]].End }
func (h beliefHeap) Swap(i, j int)      { h.ids[i], h.ids[j] = h.ids[j], h.ids[i] }
func (h *beliefHeap) Push(x any)        { h.ids = append(h.ids, x.(int)) }
func (h *beliefHeap) Pop() any {
	x := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return x
}

// holdsAgree checks that the streaming double-hold check of h gives the
// batch check's result.
func holdsAgree(t *testing.T, h history.History) {
	t.Helper()
	got := DoubleHoldChecker{}.checkValid(context.Background(), h)
	want := batchDoubleHold(context.Background(), h, Analyze(h))
	got.Elapsed, want.Elapsed = 0, 0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("streaming check %+v\nbatch check %+v", got, want)
	}
}

// TestHoldStreamAsBatch holds the streaming double-hold check to the batch
// one on every well-formed history stored in the repository and on
// synthetic histories, valid and with each kind of anomaly planted.
func TestHoldStreamAsBatch(t *testing.T) {
	for _, sh := range storedHistories(t) {
		t.Run(sh.name, func(t *testing.T) { holdsAgree(t, sh.h) })
	}
	for seed := uint64(0); seed < 24; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		opts := synth.Options{Workers: 1 + r.IntN(8), Keys: 1 + r.IntN(3), Ops: 2000, TTL: time.Duration(3+r.IntN(40)) * time.Millisecond,
			InfoRate: 0.04, Tokens: seed%2 == 0, Session: seed%3 == 1}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		t.Run(fmt.Sprintf("synth-%d", seed), func(t *testing.T) { holdsAgree(t, h) })
		for _, k := range synth.Kinds {
			bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, k)
			if err != nil {
				continue
			}
			t.Run(fmt.Sprintf("synth-%d-%s", seed, k), func(t *testing.T) { holdsAgree(t, bad) })
		}
	}
}

// FuzzHoldStream widens TestHoldStreamAsBatch to any seed and shape of
// synthetic history, valid or with one anomaly planted.
func FuzzHoldStream(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(2), uint8(20), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, workers, keys, ttlMs, kind uint8) {
		opts := synth.Options{Workers: 1 + int(workers%10), Keys: 1 + int(keys%4), Ops: 800,
			TTL: time.Duration(3+int(ttlMs%60)) * time.Millisecond, InfoRate: 0.04, Tokens: seed%2 == 0, Session: seed%3 == 0}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		holdsAgree(t, h)
		if bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, synth.Kinds[int(kind)%len(synth.Kinds)]); err == nil {
			holdsAgree(t, bad)
		}
	})
}
