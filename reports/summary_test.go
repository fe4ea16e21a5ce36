package reports

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// namedHistory is a saved or synthetic history with its name.
type namedHistory struct {
	name string
	h    history.History
}

// savedHistories returns every well-formed saved history (the checker's
// fixtures, history's example, the report's saved runs and fixtures) and
// synthetic ones, valid and with each anomaly kind planted.
func savedHistories(t *testing.T) []namedHistory {
	t.Helper()
	var files []string
	for _, glob := range []string{"../checker/testdata/*.jsonl", "../history/testdata/*.jsonl", "testdata/store/*/*/history.jsonl"} {
		fs, err := filepath.Glob(filepath.FromSlash(glob))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, fs...)
	}
	var out []namedHistory
	for _, f := range files {
		h, _, err := history.ReadFile(f)
		if err != nil || history.Validate(h) != nil {
			continue // not well-formed: the checker draws no belief
		}
		out = append(out, namedHistory{filepath.ToSlash(f), h})
	}
	if len(out) < 50 {
		t.Fatalf("only %d well-formed saved histories found", len(out))
	}
	out = append(out, namedHistory{"invalidHistory", invalidHistory()}, namedHistory{"validHistory", validHistory()},
		namedHistory{"livenessHistory", livenessHistory()}, namedHistory{"queueHistory", queueHistory(6, "t1")})
	opts := synth.Options{Workers: 6, Keys: 2, Ops: 6000, TTL: 50 * time.Millisecond, InfoRate: 0.03, Tokens: true, NemesisEvery: 300}
	h := synth.Generate(rand.New(rand.NewPCG(5, 6)), opts)
	out = append(out, namedHistory{"synthetic", h})
	for i, kind := range synth.Kinds {
		bad, err := synth.Inject(rand.New(rand.NewPCG(7, uint64(i))), h, kind)
		if err != nil {
			t.Fatalf("planting %s: %v", kind, err)
		}
		out = append(out, namedHistory{"synthetic with " + kind, bad})
	}
	return out
}

// followedHolds feeds h to a follower and returns the beliefs it found,
// in the order of their grants.
func followedHolds(h history.History) []drawnHold {
	f := newFollower()
	var out []drawnHold
	f.ended = func(b *drawnHold) { out = append(out, *b) }
	for i := range h {
		op := h[i]
		f.add(&op)
	}
	f.finish()
	slices.SortFunc(out, func(a, b drawnHold) int { return cmp.Compare(a.I, b.I) })
	return out
}

// holdsAgree fails t unless the follower finds in h the beliefs
// checker.Analyze finds.
func holdsAgree(t *testing.T, h history.History) {
	t.Helper()
	want := beliefHolds(h, checker.Analyze(h))
	got := followedHolds(h)
	if len(want) == 0 && len(got) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			if i >= len(got) || i >= len(want) || got[i] != want[i] {
				t.Fatalf("%d beliefs followed, the checker has %d; the first that differs (%d): followed %+v, the checker's %+v",
					len(got), len(want), i, at(got, i), at(want, i))
			}
		}
	}
}

func at[T any](xs []T, i int) any {
	if i < len(xs) {
		return xs[i]
	}
	return "none"
}

// TestFollowerMatchesAnalyze holds the beliefs the summary follows op by op
// to the checker's (checker.Analyze) on every saved history.
func TestFollowerMatchesAnalyze(t *testing.T) {
	for _, nh := range savedHistories(t) {
		t.Run(nh.name, func(t *testing.T) { holdsAgree(t, nh.h) })
	}
}

// FuzzFollowerMatchesAnalyze widens TestFollowerMatchesAnalyze to any seed
// and shape of synthetic history, valid or with one anomaly planted.
func FuzzFollowerMatchesAnalyze(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(2), uint8(20), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, workers, keys, ttlMs, kind uint8) {
		h := fuzzHistory(seed, workers, keys, ttlMs)
		holdsAgree(t, h)
		if bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, synth.Kinds[int(kind)%len(synth.Kinds)]); err == nil {
			holdsAgree(t, bad)
			detailAgrees(t, bad, 3)
		}
		detailAgrees(t, h, 3)
	})
}

// fuzzHistory is a synthetic history of the shape the fuzz targets give.
func fuzzHistory(seed uint64, workers, keys, ttlMs uint8) history.History {
	opts := synth.Options{Workers: 1 + int(workers%10), Keys: 1 + int(keys%4), Ops: 800,
		TTL: time.Duration(3+int(ttlMs%60)) * time.Millisecond, InfoRate: 0.04, Tokens: seed%2 == 0, Session: seed%3 == 0, NemesisEvery: 100}
	return synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
}

// summarize feeds h to a Summary whose detail windows are ranges.
func summarize(h history.History, ranges [][2]int) *Summary {
	s := newSummary(ranges)
	for i := range h {
		op := h[i]
		s.add(&op)
	}
	s.finish()
	return s
}

// spanKey is a span without its row, to compare drawings.
func spanKey(s span) string {
	s.Row = 0
	return fmt.Sprintf("%+v", s)
}

// detailAgrees fails t unless a summary of h draws in full detail what the
// in-memory timeline draws: over the whole history, the same timeline;
// over each of n windows, every span the timeline draws across the window,
// and nothing it does not draw.
func detailAgrees(t *testing.T, h history.History, n int) {
	t.Helper()
	if len(h) == 0 {
		return
	}
	full := buildTimeline(h)
	whole := summarize(h, [][2]int{{0, h[len(h)-1].Index}}).tl
	whole.facts = full.facts
	if !reflect.DeepEqual(whole.compact(nil), full.compact(nil)) || whole.End != full.End || whole.Last != full.Last {
		t.Fatalf("the summary's detail of the whole history differs from its timeline")
	}
	all := map[string]bool{}
	for _, s := range full.Spans {
		all[spanKey(s)] = true
	}
	for k := range n {
		mid := h[len(h)*(2*k+1)/(2*n)].Index
		lo, hi := max(mid-15, 0), mid+15
		d := summarize(h, [][2]int{{lo, hi}})
		drawn := map[string]bool{}
		for _, s := range d.tl.Spans {
			drawn[spanKey(s)] = true
			if !all[spanKey(s)] {
				t.Fatalf("window %d..%d draws %s, which the timeline does not", lo, hi, describeSpan(s))
			}
		}
		t0, t1 := d.detail.extents[0][0], d.detail.extents[0][1]
		for _, s := range full.Spans {
			across := s.Start < t1 && s.End > t0 || (s.I >= lo && s.I <= hi) || (s.J >= lo && s.J <= hi)
			if across && !drawn[spanKey(s)] {
				t.Fatalf("window %d..%d (%v..%v) does not draw %s", lo, hi, t0, t1, describeSpan(s))
			}
		}
	}
}

// TestSummaryDetailMatchesTimeline: the full detail a long history's report
// draws is the timeline a short history's report draws, on every saved
// history.
func TestSummaryDetailMatchesTimeline(t *testing.T) {
	for _, nh := range savedHistories(t) {
		t.Run(nh.name, func(t *testing.T) { detailAgrees(t, nh.h, 3) })
	}
}

// TestSummaryMatchesExactDrawing: on every saved history, a summary's bars
// are the checker's beliefs bucketed, its counts the completions, its
// throughput plot the exact one, and its latency plots' quantiles within
// 4% of the exact ones.
func TestSummaryMatchesExactDrawing(t *testing.T) {
	for _, nh := range savedHistories(t) {
		t.Run(nh.name, func(t *testing.T) {
			s := summarize(nh.h, nil)
			full := buildTimeline(nh.h)
			barsAgree(t, nh.h, s)
			countsAgree(t, nh.h, s)
			if full.Last <= 0 {
				return
			}
			tp, _ := s.plots.plots(full.Last, full.Nemesis)
			if want := throughputPlot(nh.h, full.Last, full.Nemesis); tp.SVG != want.SVG {
				t.Errorf("the summary's throughput plot differs from the exact one")
			}
			quantilesAgree(t, nh.h, s, full.Last)
		})
	}
}

// barsAgree fails t unless the bars of s are the checker's beliefs of h,
// bucketed by their start: as many, from the earliest start to the latest
// end, with the length of their union where they do not overlap.
func barsAgree(t *testing.T, h history.History, s *Summary) {
	t.Helper()
	want := map[string]map[int][]drawnHold{}
	for _, b := range beliefHolds(h, checker.Analyze(h)) {
		if want[b.Key] == nil {
			want[b.Key] = map[int][]drawnHold{}
		}
		k := int(b.Start / s.width)
		want[b.Key][k] = append(want[b.Key][k], b)
	}
	for key, byBucket := range want {
		l := s.laneOf[key]
		if l == nil {
			t.Fatalf("no lane for key %q", key)
		}
		for k, bs := range byBucket {
			if k >= len(l.holds) {
				t.Fatalf("key %q: no bar in bucket %d", key, k)
			}
			got := l.holds[k]
			lo, hi, union, overlap := exactUnion(bs, s.end)
			if int(got.n) != len(bs) || got.lo != lo || min(got.hi, s.end) != hi || (!overlap && got.union(s.end) != union) {
				t.Errorf("key %q bucket %d: bar of %d holds [%v, %v] union %v; the checker's %d beliefs: [%v, %v] union %v (overlap %v)",
					key, k, got.n, got.lo, got.hi, got.union(s.end), len(bs), lo, hi, union, overlap)
			}
		}
		n := 0
		for _, b := range l.holds {
			n += int(b.n)
		}
		if l.keys == 1 && n != countHolds(byBucket) {
			t.Errorf("key %q: %d holds in bars, the checker has %d", key, n, countHolds(byBucket))
		}
	}
}

func countHolds(m map[int][]drawnHold) int {
	n := 0
	for _, bs := range m {
		n += len(bs)
	}
	return n
}

// exactUnion returns the earliest start, the latest end and the length of
// the union of the holds (cut at end), and whether two of them overlap.
func exactUnion(bs []drawnHold, end time.Duration) (lo, hi, union time.Duration, overlap bool) {
	bs = slices.Clone(bs)
	slices.SortFunc(bs, func(a, b drawnHold) int { return cmp.Compare(a.Start, b.Start) })
	lo, hi = bs[0].Start, min(bs[0].End, end)
	cs, ce := bs[0].Start, min(bs[0].End, end)
	for _, b := range bs[1:] {
		e := min(b.End, end)
		hi = max(hi, e)
		if b.Start < ce {
			overlap = true
		}
		if b.Start > ce {
			union += ce - cs
			cs, ce = b.Start, e
		} else {
			ce = max(ce, e)
		}
	}
	return lo, hi, union + ce - cs, overlap
}

// countsAgree fails t unless the counts of s are the completions of h by
// key, bucket and outcome.
func countsAgree(t *testing.T, h history.History, s *Summary) {
	t.Helper()
	want := map[*sumLane]map[int][4]uint32{}
	for _, op := range h {
		if op.IsNemesis() || op.Type == history.Invoke {
			continue
		}
		l := s.laneOf[op.Key]
		if want[l] == nil {
			want[l] = map[int][4]uint32{}
		}
		k, c := int(op.Time/s.width), want[l][int(op.Time/s.width)]
		if op.F == history.FLeaseLost {
			c[3]++
		} else {
			c[outcomeOf(op.Type)]++
		}
		want[l][k] = c
	}
	for l, byBucket := range want {
		for k, c := range l.counts {
			if c != byBucket[k] {
				t.Errorf("key %q bucket %d: counted %v, the history has %v", l.key, k, c, byBucket[k])
			}
		}
	}
}

// quantilesAgree fails t unless the latency sketches of s count the exact
// samples of h, with their range, and give every bucket's p50 and p99
// within 4%.
func quantilesAgree(t *testing.T, h history.History, s *Summary, end time.Duration) {
	t.Helper()
	samples, fs := latencySamples(h)
	if got := orderFs(slices.Clone(s.plots.fs)); !slices.Equal(got, fs) {
		t.Fatalf("latency plots of %v, want %v", got, fs)
	}
	w := bucketWidth(end)
	if s.plots.tw != w {
		t.Fatalf("buckets of %v, the exact plots' are %v", s.plots.tw, w)
	}
	for _, f := range fs {
		ls, exact := s.plots.lat[f], samples[f]
		if ls.n != len(exact) {
			t.Errorf("%s: %d latencies, the history has %d", f, ls.n, len(exact))
		}
		buckets := map[int][]time.Duration{}
		for _, x := range exact {
			buckets[int(x.at/w)] = append(buckets[int(x.at/w)], x.lat)
		}
		for b, lats := range buckets {
			slices.Sort(lats)
			for _, q := range []float64{0.5, 0.99} {
				want := lats[min(int(q*float64(len(lats))), len(lats)-1)]
				got := min(max(quantileOf(ls.hist[b], q), ls.lo), ls.hi)
				if r := float64(got) / float64(want); r > 1.04 || r < 1/1.04 {
					t.Errorf("%s bucket %d: p%g %v, exactly %v", f, b, q*100, got, want)
				}
			}
		}
	}
}

// TestBarUnion: a bar's union is the length its intervals cover, folded in
// the order they end, split over buckets and merged.
func TestBarUnion(t *testing.T) {
	type iv struct{ s, e time.Duration }
	tests := []struct {
		name  string
		ivs   []iv // in the order they end
		split int  // the first split of them go to the first bucket, merged with the rest
		want  time.Duration
	}{
		{"one", []iv{{1, 4}}, 0, 3},
		{"apart", []iv{{1, 4}, {6, 7}, {9, 12}}, 0, 7},
		{"touching", []iv{{1, 4}, {4, 7}}, 0, 6},
		{"overlapping, in order", []iv{{1, 5}, {3, 8}}, 0, 7},
		{"the later ends first, overlapping", []iv{{3, 8}, {1, 5}}, 0, 7},
		{"the earlier ends later, apart", []iv{{5, 8}, {1, 3}}, 0, 5},
		{"over two buckets, apart", []iv{{1, 4}, {6, 7}, {9, 12}}, 2, 7},
		{"over two buckets, touching", []iv{{1, 4}, {4, 7}}, 1, 6},
		{"over two buckets, the first touching the second", []iv{{1, 5}, {5, 7}, {8, 12}}, 1, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a, b bar
			for k, x := range tc.ivs {
				if k < tc.split {
					a.fold(x.s, x.e, false, k)
				} else {
					b.fold(x.s, x.e, false, k)
				}
			}
			a.merge(b)
			if got := a.union(100); got != tc.want || int(a.n) != len(tc.ivs) {
				t.Errorf("union %v of %d, want %v of %d", got, a.n, tc.want, len(tc.ivs))
			}
		})
	}
}
