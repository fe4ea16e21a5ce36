package checker

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// resourceStreamCheck runs the streaming resource check over h under drift
// d, compacting each key after every compactMin events.
func resourceStreamCheck(h history.History, d float64, compactMin int) Result {
	rs := newResourceStream(d)
	rs.compactMin = compactMin
	feedHoldsFirst(h, followHistory(h), rs.add, rs.hold)
	return rs.result(context.Background(), ResourceChecker{}.Name())
}

// followedFeed feeds a resource stream op by op with a Follower beside it,
// as CheckFile does: each op's events, then the op.
type followedFeed struct {
	fol *Follower
	rs  *resourceStream
	evs []HoldEvent
}

func newFollowedFeed(rs *resourceStream) *followedFeed {
	return &followedFeed{fol: NewFollower(), rs: rs}
}

func (f *followedFeed) add(op *history.Op) {
	f.evs = f.fol.Add(op, f.evs[:0])
	for i := range f.evs {
		f.rs.hold(&f.evs[i])
	}
	f.rs.add(op)
}

// resourceAgrees checks that the streaming resource check of h gives the
// batch check's result under drift d, compacting after every event and at
// its own pace.
func resourceAgrees(t *testing.T, h history.History, d float64) {
	t.Helper()
	want := batchResource(context.Background(), h, Analyze(h), d)
	want.Elapsed = 0
	for _, every := range []int{1, 7, newResourceStream(d).compactMin} {
		got := resourceStreamCheck(h, d, every)
		got.Elapsed = 0
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("streaming check (compacting every %d events) %+v\nbatch check %+v", every, got, want)
		}
	}
	if got := (ResourceChecker{Drift: d}).Check(context.Background(), h); got.Verdict != want.Verdict {
		t.Fatalf("ResourceChecker.Check says %s, the batch check %s", got.Verdict, want.Verdict)
	}
}

// TestResourceStreamAsBatch holds the streaming resource check to the batch
// one on every well-formed history stored in the repository, on synthetic
// histories, valid and with each kind of anomaly planted, and on small
// random histories of every shape the format allows.
func TestResourceStreamAsBatch(t *testing.T) {
	for _, sh := range storedHistories(t) {
		t.Run(sh.name, func(t *testing.T) {
			resourceAgrees(t, sh.h, DefaultDrift)
			resourceAgrees(t, sh.h, 0)
		})
	}
	for seed := uint64(0); seed < 24; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		opts := synth.Options{Workers: 1 + r.IntN(8), Keys: 1 + r.IntN(3), Ops: 2000, TTL: time.Duration(3+r.IntN(40)) * time.Millisecond,
			InfoRate: 0.04, Tokens: seed%2 == 0, Session: seed%3 == 1}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		t.Run(fmt.Sprintf("synth-%d", seed), func(t *testing.T) { resourceAgrees(t, h, DefaultDrift) })
		for _, k := range synth.Kinds {
			bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, k)
			if err != nil {
				continue
			}
			t.Run(fmt.Sprintf("synth-%d-%s", seed, k), func(t *testing.T) { resourceAgrees(t, bad, DefaultDrift) })
		}
	}
	for seed := uint64(0); seed < 400; seed++ {
		cycles := seed%2 == 0
		h := randomResourceHistory(rand.New(rand.NewPCG(seed, 3)), 20+int(seed%200), cycles)
		t.Run(fmt.Sprintf("random-%d-cycles-%v", seed, cycles), func(t *testing.T) { resourceAgrees(t, h, []float64{0, DefaultDrift, 0.2}[seed%3]) })
	}
}

// FuzzResourceStream widens TestResourceStreamAsBatch to any seed and shape
// of synthetic history, valid or with one anomaly planted, and of random
// history.
func FuzzResourceStream(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(2), uint8(20), uint8(0))
	f.Add(uint64(7), uint8(1), uint8(0), uint8(3), uint8(3))
	f.Add(uint64(42), uint8(9), uint8(3), uint8(59), uint8(4))
	f.Fuzz(func(t *testing.T, seed uint64, workers, keys, ttlMs, kind uint8) {
		opts := synth.Options{Workers: 1 + int(workers%10), Keys: 1 + int(keys%4), Ops: 800,
			TTL: time.Duration(3+int(ttlMs%60)) * time.Millisecond, InfoRate: 0.04, Tokens: seed%2 == 0, Session: seed%3 == 0}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		resourceAgrees(t, h, DefaultDrift)
		if bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, synth.Kinds[int(kind)%len(synth.Kinds)]); err == nil {
			resourceAgrees(t, bad, DefaultDrift)
		}
		rh := randomResourceHistory(rand.New(rand.NewPCG(seed, uint64(kind))), 10+int(ttlMs)%250, keys%2 == 0)
		resourceAgrees(t, rh, []float64{0, DefaultDrift, 0.2}[int(workers)%3])
	})
}

// TestResourceStreamForgets feeds the streaming resource check long
// synthetic histories of a lock used correctly and checks that what it
// holds of each key stays within a bound while the history grows, and that
// a write outstanding to the end (docs/history.md §6, the worst case)
// makes it hold every later write of its key.
func TestResourceStreamForgets(t *testing.T) {
	tests := []struct {
		name string
		opts synth.Options
	}{
		{"fenced leases", synth.Options{Workers: 8, Keys: 2, Ops: 60000, TTL: 20 * time.Millisecond, InfoRate: 0.02, Tokens: true}},
		{"session locks", synth.Options{Workers: 5, Keys: 1, Ops: 60000, TTL: 20 * time.Millisecond, InfoRate: 0.02, Session: true}},
		{"unfenced, one worker", synth.Options{Workers: 1, Keys: 3, Ops: 60000, TTL: 10 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := synth.Generate(rand.New(rand.NewPCG(5, 1)), tc.opts)
			rs := newResourceStream(DefaultDrift)
			feed := newFollowedFeed(rs)
			most := 0
			for i := range h {
				feed.add(&h[i])
				for _, k := range rs.keys {
					most = max(most, k.size())
				}
			}
			if most > 400 {
				t.Fatalf("a key held %d entries at once over %d ops", most, len(h))
			}
		})
	}
	t.Run("a write outstanding to the end", func(t *testing.T) {
		h := synth.Generate(rand.New(rand.NewPCG(5, 1)), synth.Options{Workers: 4, Keys: 1, Ops: 20000, TTL: 20 * time.Millisecond})
		stalled := slices.IndexFunc(h, func(op history.Op) bool { return op.F == history.FWrite && op.Type == history.Invoke })
		h = slices.DeleteFunc(slices.Clone(h), func(op history.Op) bool { return op.Process == h[stalled].Process && op.Index > stalled })
		for i := range h {
			h[i].Index = i
		}
		rs := newResourceStream(DefaultDrift)
		feed := newFollowedFeed(rs)
		for i := range h {
			feed.add(&h[i])
		}
		if k := rs.keys["k0"]; int(k.accepted)-len(k.writes) > 10 {
			t.Fatalf("retired %d of %d writes behind a write outstanding from op %d", int(k.accepted)-len(k.writes), k.accepted, stalled)
		}
		resourceAgrees(t, h, DefaultDrift)
	})
}

// TestResourceStreamCancelled holds the streaming check to the batch one
// when the check's context has ended: unknown once a key has a write.
func TestResourceStreamCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	write := history.History{
		{Index: 0, Time: 1, Process: 0, Type: history.Invoke, F: history.FWrite, Key: "k", Value: history.IntValue(1)},
		{Index: 1, Time: 2, Process: 0, Type: history.OK, F: history.FWrite, Key: "k", Value: history.IntValue(1)},
	}
	read := history.History{
		{Index: 0, Time: 1, Process: 0, Type: history.Invoke, F: history.FRead, Key: "k"},
		{Index: 1, Time: 2, Process: 0, Type: history.OK, F: history.FRead, Key: "k", Value: history.IntValue(1)},
	}
	tests := []struct {
		name string
		h    history.History
		want Verdict
	}{
		{"a write", write, Unknown},
		{"reads only", read, Valid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ResourceChecker{}.checkValid(ctx, tc.h)
			want := batchResource(ctx, tc.h, Analyze(tc.h), 0)
			got.Elapsed, want.Elapsed = 0, 0
			if !reflect.DeepEqual(got, want) || got.Verdict != tc.want {
				t.Fatalf("streaming check %+v, batch check %+v, want %s", got, want, tc.want)
			}
		})
	}
}

// TestValueSet checks the runs of consecutive values the stream keeps of
// the values written.
func TestValueSet(t *testing.T) {
	tests := []struct {
		name   string
		add    []int64
		runs   []valueRun
		absent []int64
	}{
		{"empty", nil, nil, []int64{0, 1}},
		{"one run in order", []int64{1, 2, 3}, []valueRun{{1, 3}}, []int64{0, 4}},
		{"one run out of order", []int64{3, 1, 2}, []valueRun{{1, 3}}, []int64{0, 4}},
		{"a gap", []int64{1, 3}, []valueRun{{1, 1}, {3, 3}}, []int64{0, 2, 4}},
		{"twice the same", []int64{5, 5}, []valueRun{{5, 5}}, []int64{4, 6}},
		{"extremes", []int64{math.MaxInt64, math.MinInt64, math.MaxInt64 - 1}, []valueRun{{math.MinInt64, math.MinInt64}, {math.MaxInt64 - 1, math.MaxInt64}},
			[]int64{math.MinInt64 + 1, 0, math.MaxInt64 - 2}},
		{"negatives joined", []int64{-1, 1, 0}, []valueRun{{-1, 1}}, []int64{-2, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s valueSet
			for _, v := range tc.add {
				s.add(v)
			}
			if !reflect.DeepEqual(s.runs, tc.runs) {
				t.Fatalf("runs %v, want %v", s.runs, tc.runs)
			}
			for _, v := range tc.add {
				if !s.has(v) {
					t.Fatalf("%d added but not in %v", v, s.runs)
				}
			}
			for _, v := range tc.absent {
				if s.has(v) {
					t.Fatalf("%d never added but in %v", v, s.runs)
				}
			}
		})
	}
}
