package hunt

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

func TestCorpusOrder(t *testing.T) {
	var c Corpus
	for i, e := range []struct {
		m   float64
		has bool
	}{{0.5, true}, {0, false}, {-0.2, true}, {0.05, true}, {0.5, true}, {0, false}, {0.01, true}} {
		c.Add(Entry{Margin: e.m, HasMargin: e.has, Order: i})
	}
	var got []int
	for _, e := range c.Best(100) {
		got = append(got, e.Order)
	}
	// closest first, ties in the order they ran, runs without a margin last
	if want := []int{2, 6, 3, 0, 4, 1, 5}; !slices.Equal(got, want) {
		t.Errorf("corpus order %v, want %v", got, want)
	}
	if best := c.Best(SteerBest); len(best) != SteerBest || best[0].Order != 2 {
		t.Errorf("Best(%d) = %+v", SteerBest, best)
	}
	var empty Corpus
	if len(empty.Best(SteerBest)) != 0 || empty.Len() != 0 {
		t.Error("an empty corpus has runs")
	}
}

func TestScore(t *testing.T) {
	lease := func(m time.Duration) *checker.TimeMargin {
		return &checker.TimeMargin{Margin: m, Lease: 2 * time.Second}
	}
	tests := []struct {
		name string
		ms   []checker.Margin
		want float64
		ok   bool
	}{
		{name: "no key", ms: nil},
		{name: "no margin applies", ms: []checker.Margin{{Key: "a"}, {Key: "b", Token: &checker.TokenMargin{Margin: 3}}}},
		{name: "the smallest over keys", ms: []checker.Margin{{Key: "a", Lease: lease(time.Second)}, {Key: "b", Lease: lease(100 * time.Millisecond)}}, want: 0.05, ok: true},
		{name: "the ttl stands for a lease the margin does not name", ms: []checker.Margin{{Key: "a", Write: &checker.TimeMargin{Margin: -250 * time.Millisecond}}}, want: -0.25, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Score(tt.ms, time.Second)
			if ok != tt.ok || got != tt.want {
				t.Errorf("Score = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// testSpace is the schedule space of a kind on a base scenario.
type testSpace struct {
	sp   Space
	base *scenarios.Scenario
}

// spaces are the schedule spaces of kinds that take nodes, links, workers,
// offsets, no target, and of a moment, on one node and on three, by kind
// and number of nodes ("kill-3").
func spaces(t *testing.T) map[string]testSpace {
	t.Helper()
	b3 := base()
	b3.Nemesis = scenarios.Nemesis{}
	b1 := base()
	b1.Nemesis, b1.System.Nodes, b1.Lock.Algorithm = scenarios.Nemesis{}, 1, "redis-single"
	out := map[string]testSpace{}
	for _, b := range []*scenarios.Scenario{b1, b3} {
		for _, kind := range []string{"kill", "partition", "latency", "client-pause", "clock-bump", "client-clock", "restart", "failover"} {
			out[fmt.Sprintf("%s-%d", kind, b.System.Nodes)] = testSpace{NewSpace(b, kind), b}
		}
	}
	return out
}

func TestNewSpace(t *testing.T) {
	sp := spaces(t)
	for name, want := range map[string][]string{
		"kill-3":         {"one", "minority", "majority", "n1", "n2", "n3"},
		"partition-3":    {"one", "minority", "majority", "w0", "n1", "n2", "n3", "halves", "w1", "w2", "w3"},
		"partition-1":    {"one", "w0", "w1", "w2", "w3"},
		"client-pause-3": {"one", "w0", "w1", "w2", "w3"},
		"failover-3":     nil,
	} {
		if got := sp[name].sp.Targets; !slices.Equal(got, want) {
			t.Errorf("%s: targets %v, want %v", name, got, want)
		}
	}
	if o := sp["clock-bump-3"].sp.Offsets; len(o) != 3 || len(sp["kill-3"].sp.Offsets) != 0 {
		t.Errorf("offsets: clock-bump %v, kill %v", o, sp["kill-3"].sp.Offsets)
	}
	if !sp["restart-1"].sp.Moment || sp["kill-1"].sp.Moment {
		t.Error("restart is the moment, kill is not")
	}
	if c := sp["partition-3"].sp.Choices["direction"]; len(c) != 3 || sp["kill-3"].sp.Choices != nil {
		t.Errorf("choices: partition direction %v, kill %v", c, sp["kill-3"].sp.Choices)
	}
	if p := sp["client-pause-3"].sp.Points; len(p) != 2 || sp["partition-3"].sp.Points != nil {
		t.Errorf("points: client-pause %v, partition %v", p, sp["partition-3"].sp.Points)
	}
}

// TestMutate mutates random schedules of every space again and again: each
// mutant fits its space and differs from its parent, and every mutation
// that applies is drawn.
func TestMutate(t *testing.T) {
	for name, ts := range spaces(t) {
		sp := ts.sp
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 9))
			seen := map[string]bool{}
			for seed := uint64(1); seed <= 10; seed++ {
				s := Resolved(Variant(ts.base, sp.Kind, seed, Lease{}, nil))
				if err := Fits(s, sp); err != nil {
					t.Fatalf("seed %d: the random schedule does not fit: %v", seed, err)
				}
				for range 30 {
					m, what, ok := Mutate(rng, s, sp)
					if !ok {
						t.Fatalf("no mutation of %v fits", s)
					}
					if err := Fits(m, sp); err != nil || slices.EqualFunc(m, s, sameStep) {
						t.Fatalf("%s: %v from %v: %v", what, m, s, err)
					}
					seen[strings.Fields(what)[0]] = true
					s = m
				}
			}
			want := []string{MutateShift, MutateAdd, MutateDrop}
			if len(sp.Targets) >= 2 || len(sp.Offsets) >= 2 {
				want = append(want, MutateRetarget)
			}
			for _, w := range want {
				if !seen[w] {
					t.Errorf("never drew %s (drew %v)", w, seen)
				}
			}
		})
	}
}

func TestFits(t *testing.T) {
	sp := spaces(t)["kill-3"].sp
	ok := nemesis.Schedule{{At: time.Second, Fault: "kill", Targets: []string{"n2"}, Duration: time.Second}, {At: 3 * time.Second, Fault: "kill", Targets: []string{"one"}, Duration: 500 * time.Millisecond}}
	if err := Fits(ok, sp); err != nil {
		t.Fatalf("Fits(%v) = %v", ok, err)
	}
	tests := []struct {
		name   string
		change func(s nemesis.Schedule) nemesis.Schedule
	}{
		{"no fault", func(nemesis.Schedule) nemesis.Schedule { return nil }},
		{"another kind", func(s nemesis.Schedule) nemesis.Schedule { s[0].Fault = "pause"; return s }},
		{"before the start", func(s nemesis.Schedule) nemesis.Schedule { s[0].At = 0; return s }},
		{"after the run", func(s nemesis.Schedule) nemesis.Schedule { s[1].At = 10 * time.Second; return s }},
		{"too long", func(s nemesis.Schedule) nemesis.Schedule { s[0].Duration = time.Minute; return s }},
		{"an unknown target", func(s nemesis.Schedule) nemesis.Schedule { s[0].Targets = []string{"n9"}; return s }},
		{"two targets", func(s nemesis.Schedule) nemesis.Schedule { s[0].Targets = []string{"n1", "n2"}; return s }},
		{"an offset", func(s nemesis.Schedule) nemesis.Schedule { s[0].Offset = time.Second; return s }},
		{"overlapping", func(s nemesis.Schedule) nemesis.Schedule { s[1].At = 2200 * time.Millisecond; return s }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.change(slices.Clone(ok))
			if err := Fits(s, sp); err == nil {
				t.Errorf("Fits(%v) = nil, want an error", s)
			}
		})
	}
}

// TestSteeredCampaign runs a campaign whose runs come closest to a
// violation when a kill starts near 2 s: steered, most runs after the first
// of a kind mutate an earlier run, every mutant fits the kind's space and
// keeps its parent's workload (its ttl and hold too, and for latency every
// fault its parent's delay), and the rows report the smallest margins;
// random, none is steered.
func TestSteeredCampaign(t *testing.T) {
	type ran struct {
		kind string
		sc   *scenarios.Scenario
	}
	var runs []ran
	run := func(_ context.Context, sc *scenarios.Scenario) (Outcome, error) {
		s := Resolved(sc)
		kind := NoFault
		if len(s) > 0 {
			kind = s[0].Fault
		}
		runs = append(runs, ran{kind, sc})
		out := Outcome{Dir: fmt.Sprintf("run-%d", len(runs)), Verdict: checker.Valid}
		if len(s) > 0 {
			m := (s[0].At - 2*time.Second).Abs()
			out.Margins = []checker.Margin{{Key: "k", Lease: &checker.TimeMargin{Margin: m, Lease: time.Second}}}
		}
		return out, nil
	}
	for _, c := range []struct {
		kind  string
		steer bool
	}{{"kill", true}, {"kill", false}, {"latency", true}} {
		kind, steer := c.kind, c.steer
		runs = nil
		rep, err := Campaign(context.Background(), base(), run, nil, Options{Faults: []string{kind}, Runs: 12, Seed: 10, Steer: steer})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Steer != steer || rep.Rows[0].Steered != 0 {
			t.Fatalf("steer %v: report says %v, the baseline row %d steered", steer, rep.Steer, rep.Rows[0].Steered)
		}
		row := rep.Rows[1]
		if steer && row.Steered < 6 || !steer && row.Steered != 0 {
			t.Errorf("steer %v: %d of %d runs steered", steer, row.Steered, row.Runs)
		}
		best := 1e9
		sp := NewSpace(base(), kind)
		for i, r := range runs[12:] {
			if r.sc.Seed != 10+uint64(i) {
				t.Errorf("run %d has seed %d", i, r.sc.Seed)
			}
			if r.sc.Nemesis.Random == nil {
				if err := Fits(r.sc.Nemesis.Steps, sp); err != nil || !steer {
					t.Errorf("steer %v: run %d's schedule %v: %v", steer, i, r.sc.Nemesis.Steps, err)
				}
				if !slices.ContainsFunc(runs[12:12+i], func(p ran) bool {
					return p.sc.Lock.Acquire == r.sc.Lock.Acquire && p.sc.Lock.Wait == r.sc.Lock.Wait && p.sc.Lock.Renew == r.sc.Lock.Renew &&
						p.sc.Lock.TTL == r.sc.Lock.TTL && p.sc.Hold == r.sc.Hold && (sameDelays(Resolved(p.sc), r.sc.Nemesis.Steps) || drawnDelay(p.sc, r.sc.Nemesis.Steps))
				}) {
					t.Errorf("run %d's workload %+v is none of its parents'", i, r.sc.Lock)
				}
			}
			best = min(best, (Resolved(r.sc)[0].At - 2*time.Second).Abs().Seconds())
		}
		if !row.HasMargin || row.Margin != best || row.MarginRun == "" {
			t.Errorf("steer %v: row margin %v (%v, %s), want %v", steer, row.Margin, row.HasMargin, row.MarginRun, best)
		}
	}
}

// sameDelays reports whether every step of child has the delay option of
// parent's first step (none when it has none).
func sameDelays(parent, child nemesis.Schedule) bool {
	return !slices.ContainsFunc(child, func(st nemesis.Step) bool { return st.Options["delay"] != parent[0].Options["delay"] })
}

// drawnDelay reports whether every step of child has one delay, another
// that parent's run could have drawn (a delay mutation).
func drawnDelay(parent *scenarios.Scenario, child nemesis.Schedule) bool {
	d, delays := child[0].Options["delay"], latencyDelays(parent.Lock.TTL)
	return sameDelays(child, child) && slices.ContainsFunc(delays[:], func(v time.Duration) bool { return v.String() == d })
}

// TestCorpusParents checks that only runs with a margin are parents, the
// closest first, and that a corpus without one has none.
func TestCorpusParents(t *testing.T) {
	var c Corpus
	for i, e := range []struct {
		m   float64
		has bool
	}{{0, false}, {0, false}, {0.4, true}, {0, false}, {-0.1, true}} {
		c.Add(Entry{Margin: e.m, HasMargin: e.has, Order: i})
		if i == 1 && len(c.Parents(SteerBest)) != 0 {
			t.Fatalf("a corpus of runs without a margin has parents: %+v", c.Parents(SteerBest))
		}
	}
	var got []int
	for _, e := range c.Parents(SteerBest) {
		got = append(got, e.Order)
	}
	if want := []int{4, 2}; !slices.Equal(got, want) {
		t.Errorf("parents %v, want %v", got, want)
	}
}

// TestSteeringWithoutMargins runs a steered campaign whose runs have no
// margin: nothing steers it, so every run is a random draw.
func TestSteeringWithoutMargins(t *testing.T) {
	run := func(_ context.Context, sc *scenarios.Scenario) (Outcome, error) {
		if sc.Nemesis.Random == nil && len(sc.Nemesis.Steps) > 0 {
			t.Errorf("run of seed %d mutated %v", sc.Seed, sc.Nemesis.Steps)
		}
		return Outcome{Dir: "run", Verdict: checker.Valid}, nil
	}
	rep, err := Campaign(context.Background(), base(), run, nil, Options{Faults: []string{"latency"}, NoBaseline: true, Runs: 10, Seed: 3, Steer: true})
	if err != nil {
		t.Fatal(err)
	}
	if row := rep.Rows[0]; row.Runs != 10 || row.Steered != 0 {
		t.Errorf("%d runs, %d steered; want 10, none", row.Runs, row.Steered)
	}
}

// TestMutateDelay checks that a latency run's mutations may give every
// fault another of the delays its ttl draws from, and only those.
func TestMutateDelay(t *testing.T) {
	parent := Variant(base(), "latency", 2, Lease{}, nil)
	sp := NewSpace(base(), "latency").Of(parent)
	was, _ := Delay(parent)
	if len(sp.Delays) < 2 || !slices.Contains(sp.Delays, was) {
		t.Fatalf("delays %v, want several with the parent's %s", sp.Delays, was)
	}
	rng := rand.New(rand.NewPCG(2, 9))
	s := Resolved(parent)
	for range 200 {
		m, what, ok := Mutate(rng, s, sp)
		if !ok || !strings.HasPrefix(what, MutateDelay+" ") {
			continue
		}
		d := m[0].Options["delay"]
		if d == was || !slices.Contains(sp.Delays, d) || !sameDelays(m, m) || len(m) != len(s) {
			t.Fatalf("%s: %v from %v (delays %v)", what, m, s, sp.Delays)
		}
		return
	}
	t.Errorf("200 mutations of %v never changed the delay", s)
}

// TestSpaceOfKeepsDelay checks that every fault a mutation adds to a
// latency run's schedule has the run's delay, the drawn one or none.
func TestSpaceOfKeepsDelay(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6} {
		parent := Variant(base(), "latency", seed, Lease{}, nil)
		want, _ := Delay(parent)
		sp, rng := NewSpace(base(), "latency").Of(parent), rand.New(rand.NewPCG(seed, 9))
		for range 20 {
			st := sp.step(rng)
			if st.Options["delay"] != want {
				t.Fatalf("seed %d: an added fault %v, want delay %s", seed, st, want)
			}
		}
	}
	if sp := NewSpace(base(), "kill").Of(Variant(base(), "kill", 1, Lease{}, nil)); sp.Options["delay"] != "" {
		t.Errorf("a kill space took a delay: %v", sp.Options)
	}
}

func TestFormatMargin(t *testing.T) {
	tests := []struct {
		name string
		v    float64
		ok   bool
		want string
	}{
		{name: "none applied", want: "-"},
		{name: "positive", v: 0.0204, ok: true, want: "+0.020"},
		{name: "negative", v: -0.3, ok: true, want: "-0.300"},
		{name: "a hold that could not end", v: checker.MarginNeverEnded, ok: true, want: "-∞"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatMargin(tt.v, tt.ok); got != tt.want {
				t.Errorf("FormatMargin(%v, %v) = %q, want %q", tt.v, tt.ok, got, tt.want)
			}
		})
	}
}
