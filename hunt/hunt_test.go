package hunt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

func TestKinds(t *testing.T) {
	tests := []struct {
		name, system string
		want         []string
		has, hasNot  []string
		err          bool
	}{
		{name: "redis takes every fault", system: "redis", has: []string{"client-pause", "clock-bump", "kill", "failover", "sentinel-failover", "partition", "latency"}},
		{name: "etcd's clock cannot be skewed, nor failed over", system: "etcd", has: []string{"client-pause", "partition", "kill"}, hasNot: []string{"clock-bump", "clock-strobe", "failover"}},
		{name: "a chosen few", system: "redis", want: []string{"kill", "partition"}, has: []string{"kill", "partition"}, hasNot: []string{"client-pause"}},
		{name: "unknown kind", system: "redis", want: []string{"bitflip"}, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Kinds(tt.system, "local", tt.want)
			if (err != nil) != tt.err {
				t.Fatalf("Kinds = %v, %v; want error %v", got, err, tt.err)
			}
			for _, k := range tt.has {
				if !slices.Contains(got, k) {
					t.Errorf("Kinds(%s) = %v lacks %s", tt.system, got, k)
				}
			}
			for _, k := range tt.hasNot {
				if slices.Contains(got, k) {
					t.Errorf("Kinds(%s) = %v has %s", tt.system, got, k)
				}
			}
		})
	}
	// Every kind the declarations list for every system.
	all, _ := Kinds("redis", "", nil)
	if len(all) != len(nemesis.Faults()) {
		t.Errorf("redis hunts with %d kinds, the declarations have %d", len(all), len(nemesis.Faults()))
	}
}

func base() *scenarios.Scenario {
	return &scenarios.Scenario{Name: "b", System: scenarios.System{Name: "redis", Nodes: 3},
		Lock: scenarios.Lock{Algorithm: "redlock", TTL: time.Second}, Workers: 4, Duration: 10 * time.Second,
		Nemesis: scenarios.Nemesis{Steps: nemesis.Schedule{{At: time.Second, Fault: "kill"}}},
		Expect:  checker.Expectation{Verdict: checker.Invalid}}
}

// TestVariant checks a variant of a base: its seed, its schedule of the kind
// alone, its expectation, and the workloads, registers and holds its seeds
// draw.
func TestVariant(t *testing.T) {
	b := base()
	v := Variant(b, "partition", 7, Lease{}, nil)
	if v.Seed != 7 || len(v.Nemesis.Steps) != 0 || v.Nemesis.Random == nil || !slices.Equal(v.Nemesis.Random.Faults, []string{"partition"}) {
		t.Fatalf("variant %+v: want seed 7 and a random partition schedule alone", v)
	}
	if v.Expect.Verdict != checker.Valid || len(v.Expect.Anomalies) != 0 {
		t.Errorf("expectation %+v, want valid", v.Expect)
	}
	if again := Variant(b, "partition", 7, Lease{}, nil); again.Lock.Acquire != v.Lock.Acquire || again.Lock.Renew != v.Lock.Renew {
		t.Errorf("the same seed drew two workloads: %+v and %+v", v.Lock, again.Lock)
	}
	if none := Variant(b, NoFault, 7, Lease{}, nil); none.Nemesis.Random != nil || len(none.Nemesis.Steps) != 0 {
		t.Errorf("NoFault variant has faults: %+v", none.Nemesis)
	}
	if len(b.Nemesis.Steps) != 1 || b.Expect.Verdict != checker.Invalid {
		t.Error("Variant changed its base")
	}
	// Workloads drawn over seeds: both acquire modes and both renewals.
	modes := map[string]bool{}
	for s := uint64(1); s <= 20; s++ {
		v := Variant(b, "kill", s, Lease{}, nil)
		modes[v.Lock.Acquire+fmt.Sprint(v.Lock.Renew > 0)] = true
	}
	if len(modes) != 4 {
		t.Errorf("20 seeds drew workloads %v, want all four", modes)
	}
	// The register: fenced in some seeds for a lock that can run it, never
	// for one that cannot, and the seed's acquire and renewal the same
	// either way.
	noFence := func(sc *scenarios.Scenario) error {
		if sc.Resource == scenarios.Fenced {
			return errors.New("no tokens")
		}
		return nil
	}
	accept := func(*scenarios.Scenario) error { return nil }
	registers := map[string]bool{}
	for s := uint64(1); s <= 20; s++ {
		v, u := Variant(b, "kill", s, Lease{}, accept), Variant(b, "kill", s, Lease{}, noFence)
		registers[cmp.Or(v.Resource, scenarios.Unfenced)] = true
		if u.Resource == scenarios.Fenced {
			t.Fatalf("seed %d: fenced register for a lock without tokens", s)
		}
		if v.Lock.Acquire != u.Lock.Acquire || v.Lock.Renew != u.Lock.Renew {
			t.Errorf("seed %d: the register's draw changed the workload: %+v and %+v", s, v.Lock, u.Lock)
		}
	}
	variantHolds(t, b, Lease{}, false)
	variantHolds(t, b, Lease{SelfRenewing: true}, true)
	if !registers[scenarios.Fenced] || !registers[scenarios.Unfenced] {
		t.Errorf("20 seeds drew registers %v, want fenced and unfenced", registers)
	}
	variantFallbacks(t, b)
}

// variantHolds checks the holds that 60 seeds of b draw with lease: each
// the base's, a quarter, nine tenths, and in a run that renews (drawn, or
// the lock's own: selfRenewing) two and a half or four times the run's
// own ttl, in one that does not a half or three quarters of it; every one
// of the five drawn, and none longer than the ttl in a run that does not
// renew.
func variantHolds(t *testing.T, b *scenarios.Scenario, lease Lease, selfRenewing bool) {
	t.Helper()
	seen := map[string]bool{}
	for s := uint64(1); s <= 60; s++ {
		v := Variant(b, "kill", s, lease, func(*scenarios.Scenario) error { return nil })
		ttl := v.Lock.TTL
		round := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
		renewed := v.Lock.Renew > 0 || selfRenewing
		names := map[time.Duration]string{b.Hold: "base", round(ttl / 4): "ttl/4", round(ttl * 9 / 10): "0.9ttl", round(ttl / 2): "ttl/2", round(ttl * 3 / 4): "0.75ttl"}
		if renewed {
			names = map[time.Duration]string{b.Hold: "base", round(ttl / 4): "ttl/4", round(ttl * 9 / 10): "0.9ttl", round(ttl * 5 / 2): "2.5ttl", round(4 * ttl): "4ttl"}
		}
		name, ok := names[v.Hold]
		if !ok {
			t.Fatalf("seed %d: hold %v is none of %v", s, v.Hold, names)
		}
		if v.Hold > ttl && !renewed {
			t.Errorf("seed %d: hold %v of a %v lease that nobody renews", s, v.Hold, ttl)
		}
		seen[name] = true
	}
	want := []string{"base", "ttl/4", "0.9ttl", "ttl/2", "0.75ttl"}
	if selfRenewing {
		want = []string{"base", "ttl/4", "0.9ttl", "2.5ttl", "4ttl"}
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("60 seeds drew holds %v, never %s", seen, w)
		}
	}
}

// variantFallbacks checks that the variants of b drop what the lock cannot
// run: the whole drawn workload when it can run neither field, only the wait
// when it cannot wait.
func variantFallbacks(t *testing.T, b *scenarios.Scenario) {
	t.Helper()
	accept := func(*scenarios.Scenario) error { return nil }
	// A workload the lock cannot run falls back to the base's.
	refuse := func(sc *scenarios.Scenario) error {
		if sc.Lock.Acquire == scenarios.AcquireWait || sc.Lock.Renew > 0 {
			return errors.New("no")
		}
		return nil
	}
	for s := uint64(1); s <= 20; s++ {
		if v := Variant(b, "kill", s, Lease{}, refuse); v.Lock.Acquire == scenarios.AcquireWait || v.Lock.Renew > 0 {
			t.Fatalf("seed %d: refused workload kept: %+v", s, v.Lock)
		}
	}
	// A lock that cannot wait loses only the wait: the seeds that drew
	// renewal still renew, whichever acquire they drew.
	noWait := func(sc *scenarios.Scenario) error {
		if sc.Lock.Acquire == scenarios.AcquireWait {
			return errors.New("cannot wait")
		}
		return nil
	}
	for s := uint64(1); s <= 20; s++ {
		v, u := Variant(b, "kill", s, Lease{}, accept), Variant(b, "kill", s, Lease{}, noWait)
		if u.Lock.Acquire == scenarios.AcquireWait || u.Lock.Renew != v.Lock.Renew || u.Hold != v.Hold || u.Resource != v.Resource {
			t.Errorf("seed %d: a lock that cannot wait got %+v (hold %v, %s), want the drawn renewal %v, hold %v and register %s with a try",
				s, u.Lock, u.Hold, u.Resource, v.Lock.Renew, v.Hold, v.Resource)
		}
	}
}

// kindOf is the fault kind of a campaign's run: its random schedule's,
// a steered mutant's steps', or NoFault.
func kindOf(sc *scenarios.Scenario) string {
	switch {
	case sc.Nemesis.Random != nil:
		return sc.Nemesis.Random.Faults[0]
	case len(sc.Nemesis.Steps) > 0:
		return sc.Nemesis.Steps[0].Fault // a steered mutant
	}
	return NoFault
}

// TestCampaign runs a campaign whose runs are invalid under client pauses
// only, whose failovers are not applicable, and checks the rows.
func TestCampaign(t *testing.T) {
	var ran []string
	run := func(_ context.Context, sc *scenarios.Scenario) (Outcome, error) {
		kind := kindOf(sc)
		ran = append(ran, fmt.Sprintf("%s/%d", kind, sc.Seed))
		switch kind {
		case "failover":
			return Outcome{}, fmt.Errorf("%w: needs the primary-replica topology", ErrNotApplicable)
		case "client-pause":
			if sc.Seed%2 == 1 {
				return Outcome{Dir: fmt.Sprintf("run-%d", sc.Seed), Verdict: checker.Invalid, Anomalies: []string{"stale-write"}}, nil
			}
		case "kill":
			return Outcome{Verdict: checker.Unknown, FaultFailed: true}, nil
		case "pause":
			return Outcome{Verdict: checker.Unknown, FaultFailed: true, Unavailable: "cluster: unavailable: cannot pause"}, nil
		}
		return Outcome{Verdict: checker.Valid}, nil
	}
	rep, err := Campaign(context.Background(), base(), run, nil, Options{Faults: []string{"client-pause", "kill", "pause", "failover"}, Runs: 4, Seed: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"none/10", "none/11", "none/12", "none/13", "client-pause/10", "client-pause/11", "client-pause/12", "client-pause/13",
		"kill/10", "kill/11", "kill/12", "kill/13", "pause/10"} // failover: known not applicable to three masters before it runs
	if !slices.Equal(ran, want) {
		t.Errorf("runs %v, want %v", ran, want)
	}
	rows := map[string]*Row{}
	for _, r := range rep.Rows {
		rows[r.Fault] = r
	}
	if r := rows["client-pause"]; r.Invalid != 2 || r.Runs != 4 || !slices.Equal(r.Anomalies, []string{"stale-write"}) || !slices.Equal(r.Failing, []string{"run-11", "run-13"}) {
		t.Errorf("client-pause row %+v", r)
	}
	if r := rows["kill"]; r.Unknown != 4 || r.Invalid != 0 {
		t.Errorf("kill row %+v: want 4 unknown", r)
	}
	for _, k := range []string{"failover", "pause"} {
		if r := rows[k]; r.NotApplicable == "" || r.Runs != 0 {
			t.Errorf("%s row %+v: want not applicable", k, r)
		}
	}
	if !rep.Found() || rep.Runs != 12 {
		t.Errorf("found %v after %d runs, want true after 12", rep.Found(), rep.Runs)
	}

	boom := errors.New("engine gone")
	if _, err := Campaign(context.Background(), base(), func(context.Context, *scenarios.Scenario) (Outcome, error) { return Outcome{}, boom }, nil, Options{}); !errors.Is(err, boom) {
		t.Errorf("a run's error: Campaign = %v, want %v", err, boom)
	}
	slow := func(context.Context, *scenarios.Scenario) (Outcome, error) {
		time.Sleep(20 * time.Millisecond)
		return Outcome{Verdict: checker.Valid}, nil
	}
	rep, err = Campaign(context.Background(), base(), slow, nil, Options{Runs: 100, Budget: 50 * time.Millisecond})
	if err != nil || !rep.OutOfTime || rep.Found() {
		t.Errorf("budget: %v, out of time %v; want out of time, nothing found", err, rep.OutOfTime)
	}
}

// TestCampaignStops runs a campaign without its baseline that stops at the
// first run Stop accepts: no run without faults, none after that run, and
// the report names it; a Stop that never accepts lets the campaign run to
// its end.
func TestCampaignStops(t *testing.T) {
	var ran []string
	run := func(_ context.Context, sc *scenarios.Scenario) (Outcome, error) {
		kind := kindOf(sc)
		ran = append(ran, fmt.Sprintf("%s/%d", kind, sc.Seed))
		out := Outcome{Dir: fmt.Sprintf("%s-%d", kind, sc.Seed), Verdict: checker.Valid}
		if kind == "kill" && sc.Seed >= 3 {
			out.Verdict, out.Anomalies = checker.Invalid, []string{"double-hold"}
		}
		return out, nil
	}
	opts := Options{Faults: []string{"client-pause", "kill", "partition"}, Runs: 5, NoBaseline: true,
		Stop: func(o Outcome) bool { return slices.Contains(o.Anomalies, "double-hold") }}
	plan, err := Plan(base().System.Name, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 15 || plan[0].Kind != "client-pause" {
		t.Errorf("plan without a baseline: %v", plan)
	}
	rep, err := Campaign(context.Background(), base(), run, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"client-pause/1", "client-pause/2", "client-pause/3", "client-pause/4", "client-pause/5", "kill/1", "kill/2", "kill/3"}
	if !slices.Equal(ran, want) {
		t.Errorf("runs %v, want %v", ran, want)
	}
	if rep.Stopped != "kill-3" || rep.StoppedAfter != 8 || rep.Runs != 8 || len(rep.Rows) != 2 || rep.Rows[0].Fault != "client-pause" {
		t.Errorf("report: stopped %q after %d, %d runs, rows %d (first %s); want kill-3 after 8, 8 runs, 2 rows from client-pause",
			rep.Stopped, rep.StoppedAfter, rep.Runs, len(rep.Rows), rep.Rows[0].Fault)
	}
	ran = nil
	opts.Stop = func(Outcome) bool { return false }
	if rep, err = Campaign(context.Background(), base(), run, nil, opts); err != nil || rep.Stopped != "" || rep.Runs != 15 || len(ran) != 15 {
		t.Errorf("a Stop that never accepts: %v, stopped %q, %d runs; want all 15", err, rep.Stopped, rep.Runs)
	}
}

// TestCampaignProgress follows a campaign through its Progress: told
// before each run, with the runs done, the runs planned (less those of a
// kind found not applicable) and the invalid runs so far.
func TestCampaignProgress(t *testing.T) {
	run := func(_ context.Context, sc *scenarios.Scenario) (Outcome, error) {
		switch {
		case sc.Nemesis.Random == nil:
			return Outcome{Verdict: checker.Valid}, nil
		case sc.Nemesis.Random.Faults[0] == "pause":
			return Outcome{Verdict: checker.Unknown, FaultFailed: true, Unavailable: "cluster: unavailable: cannot pause"}, nil
		case sc.Nemesis.Random.Faults[0] == "failover":
			return Outcome{}, fmt.Errorf("%w: needs the primary-replica topology", ErrNotApplicable)
		case sc.Seed%2 == 1:
			return Outcome{Verdict: checker.Invalid}, nil
		}
		return Outcome{Verdict: checker.Valid}, nil
	}
	var told []Progress
	opts := Options{Faults: []string{"client-pause", "pause", "failover"}, Runs: 2, Seed: 10, Progress: func(p Progress) { told = append(told, p) }}
	b := base()
	b.System.Topology = "primary-replica" // a failover found not applicable only when it runs
	if _, err := Campaign(context.Background(), b, run, nil, opts); err != nil {
		t.Fatal(err)
	}
	want := []Progress{
		{Kind: NoFault, Seed: 10, Done: 0, Total: 8},
		{Kind: NoFault, Seed: 11, Done: 1, Total: 8},
		{Kind: "client-pause", Seed: 10, Done: 2, Total: 8},
		{Kind: "client-pause", Seed: 11, Done: 3, Total: 8},
		{Kind: "pause", Seed: 10, Done: 4, Total: 8, Invalid: 1},
		{Kind: "failover", Seed: 10, Done: 4, Total: 6, Invalid: 1},
	}
	if !slices.Equal(told, want) {
		t.Fatalf("told\n%+v\nwant\n%+v", told, want)
	}
}

// TestCampaignShards splits a campaign into shards: each runs exactly what
// Plan says it plans, the parts are disjoint and together make the whole
// campaign's runs, random campaigns deal single runs in turn and steered
// ones whole kinds (a steered kind learns from its own earlier runs), and
// the rows of the parts add up to the whole's.
func TestCampaignShards(t *testing.T) {
	kinds := []string{"client-pause", "kill", "partition"}
	for _, steer := range []bool{false, true} {
		t.Run(fmt.Sprintf("steer=%v", steer), func(t *testing.T) {
			// schedules are the whole campaign's runs' schedules: a part's
			// run of the same kind and seed must have the same, steered
			// or not. Each run's margin comes from its schedule, so that
			// steering picks parents from them.
			schedules := map[Planned]string{}
			run := func(ran *[]Planned) RunFunc {
				return func(_ context.Context, sc *scenarios.Scenario) (Outcome, error) {
					p := Planned{Kind: kindOf(sc), Seed: sc.Seed}
					*ran = append(*ran, p)
					s := fmt.Sprint(Resolved(sc))
					if was, ok := schedules[p]; !ok {
						schedules[p] = s
					} else if was != s {
						t.Errorf("%s seed %d: a part's schedule %s, the whole campaign's %s", p.Kind, p.Seed, s, was)
					}
					m := []checker.Margin{{Key: "k", Lease: &checker.TimeMargin{Margin: time.Duration(len(s)%97) * time.Millisecond, Lease: time.Second}}}
					if p.Kind == "client-pause" && sc.Seed%2 == 0 {
						return Outcome{Verdict: checker.Invalid, Anomalies: []string{"stale-write"}, Margins: m}, nil
					}
					return Outcome{Verdict: checker.Valid, Margins: m}, nil
				}
			}
			whole := Options{Faults: kinds, Runs: 5, Seed: 3, Steer: steer}
			all, err := Plan("redis", whole)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 4*5 {
				t.Fatalf("the whole campaign plans %d runs, want 20", len(all))
			}
			var ranWhole []Planned
			wholeRep, err := Campaign(context.Background(), base(), run(&ranWhole), nil, whole)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ranWhole, all) {
				t.Fatalf("the whole campaign ran %v, planned %v", ranWhole, all)
			}
			steered := 0
			for _, r := range wholeRep.Rows {
				steered += r.Steered
			}
			if steer != (steered > 0) {
				t.Fatalf("the whole campaign steered %d runs, steering %v", steered, steer)
			}
			for _, n := range []int{2, 3, 7} {
				var union []Planned
				invalid := 0
				for i := 1; i <= n; i++ {
					plan, inv := runShard(t, whole, i, n, run)
					invalid += inv
					union = append(union, plan...)
				}
				slices.SortFunc(union, func(a, b Planned) int {
					return slices.Index(all, a) - slices.Index(all, b)
				})
				if !slices.Equal(union, all) {
					t.Errorf("%d shards ran %v together, want each of %v once", n, union, all)
				}
				wholeInvalid := 0
				for _, r := range wholeRep.Rows {
					wholeInvalid += r.Invalid
				}
				if invalid != wholeInvalid {
					t.Errorf("%d shards found %d invalid runs together, the whole %d", n, invalid, wholeInvalid)
				}
			}
		})
	}
}

// runShard runs shard i of n of the campaign whole, with the runs that run
// makes, checks that it runs what Plan plans for it (a steered shard every
// run of its kinds), and returns its plan and its invalid runs.
func runShard(t *testing.T, whole Options, i, n int, run func(*[]Planned) RunFunc) (plan []Planned, invalid int) {
	t.Helper()
	opts := whole
	opts.Shard = Shard{Index: i, Count: n}
	plan, err := Plan("redis", opts)
	if err != nil {
		t.Fatal(err)
	}
	var ran []Planned
	rep, err := Campaign(context.Background(), base(), run(&ran), nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ran, plan) {
		t.Errorf("shard %d/%d ran %v, planned %v", i, n, ran, plan)
	}
	if rep.Runs != len(plan) {
		t.Errorf("shard %d/%d reports %d runs, planned %d", i, n, rep.Runs, len(plan))
	}
	for _, r := range rep.Rows {
		invalid += r.Invalid
	}
	if whole.Steer {
		kindsOf := map[string]int{}
		for _, p := range plan {
			kindsOf[p.Kind]++
		}
		for k, c := range kindsOf {
			if c != whole.Runs {
				t.Errorf("steered shard %d/%d has %d of kind %s's %d runs, want all", i, n, c, k, whole.Runs)
			}
		}
	}
	return plan, invalid
}

// TestCampaignDrawsWorkloadAgain runs a campaign whose lock turns out, when
// its first client starts, unable to renew (an external client): the run
// is made again with a workload drawn without renewal, no later run asks
// for one, and the kinds stay applicable. A lock that cannot serve a field
// that is not drawn makes the kind not applicable.
func TestCampaignDrawsWorkloadAgain(t *testing.T) {
	var renewed, runs int
	run := func(_ context.Context, sc *scenarios.Scenario) (Outcome, error) {
		if sc.Lock.Renew > 0 {
			renewed++
			return Outcome{}, &WorkloadError{Field: "lock.renew", Err: errors.New("setup failed: lock.renew: kazoo cannot renew a lease")}
		}
		runs++
		return Outcome{Verdict: checker.Valid}, nil
	}
	b := base()
	rep, err := Campaign(context.Background(), b, run, nil, Options{Faults: []string{"kill"}, Runs: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if renewed != 1 || runs != 16 || rep.Runs != 16 {
		t.Errorf("%d runs asked for renewal, %d ran, report %d; want 1, 16, 16", renewed, runs, rep.Runs)
	}
	for _, r := range rep.Rows {
		if r.NotApplicable != "" || r.Runs != 8 {
			t.Errorf("row %+v: want 8 runs, applicable", r)
		}
	}
	pausing := func(context.Context, *scenarios.Scenario) (Outcome, error) {
		return Outcome{}, &WorkloadError{Field: "client-pause point in-call", Err: errors.New("setup failed: client-pause point in-call: not a process")}
	}
	rep, err = Campaign(context.Background(), b, pausing, nil, Options{Faults: []string{"kill"}, Runs: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		if r.NotApplicable == "" || r.Runs != 0 {
			t.Errorf("row %+v: want not applicable", r)
		}
	}
}

// TestCampaignCountsUnknownRuns runs a campaign some of whose runs end with
// their verdict unknown: a check out of its budget, faults that failed (one
// beside a violation), another reason, no verdict at all. None counts as
// invalid or as held: each row counts them as unknown and says why, the
// report's totals add them up, and only the decided runs are "found
// nothing" of.
func TestCampaignCountsUnknownRuns(t *testing.T) {
	run := func(_ context.Context, sc *scenarios.Scenario) (Outcome, error) {
		if kindOf(sc) != "client-pause" {
			return Outcome{Verdict: checker.Valid}, nil
		}
		switch sc.Seed {
		case 1, 2:
			return Outcome{Verdict: checker.Unknown, OutOfBudget: true}, nil
		case 3:
			return Outcome{Verdict: checker.Invalid, Anomalies: []string{"stale-write"}, FaultFailed: true}, nil
		case 4:
			return Outcome{Verdict: checker.Unknown}, nil // the lock client broke its protocol, say
		case 5:
			return Outcome{}, nil // no verdict at all
		}
		return Outcome{Verdict: checker.Valid}, nil
	}
	rep, err := Campaign(context.Background(), base(), run, nil, Options{Faults: []string{"client-pause", "kill"}, Runs: 6})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		fault                                             string
		runs, invalid, unknown, faultsFailed, outOfBudget int
	}{
		{fault: NoFault, runs: 6},
		{fault: "client-pause", runs: 6, unknown: 5, faultsFailed: 1, outOfBudget: 2},
		{fault: "kill", runs: 6},
	}
	for i, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			r := rep.Rows[i]
			if r.Fault != tt.fault || r.Runs != tt.runs || r.Invalid != tt.invalid || r.Unknown != tt.unknown || r.FaultsFailed != tt.faultsFailed || r.OutOfBudget != tt.outOfBudget {
				t.Errorf("row %+v: want %s with %d runs, %d invalid, %d unknown (%d faults failed, %d out of budget)",
					r, tt.fault, tt.runs, tt.invalid, tt.unknown, tt.faultsFailed, tt.outOfBudget)
			}
		})
	}
	if unknown, setupFailed, faultsFailed, outOfBudget := rep.Unknowns(); unknown != 5 || setupFailed != 0 || faultsFailed != 1 || outOfBudget != 2 {
		t.Errorf("Unknowns = %d, %d, %d, %d; want 5, 0, 1, 2", unknown, setupFailed, faultsFailed, outOfBudget)
	}
	if rep.Found() || rep.Decided() != 13 {
		t.Errorf("found %v, %d runs decided; want nothing found in 13 decided runs", rep.Found(), rep.Decided())
	}
	unknown := func(context.Context, *scenarios.Scenario) (Outcome, error) {
		return Outcome{Verdict: checker.Unknown, OutOfBudget: true}, nil
	}
	if rep, err = Campaign(context.Background(), base(), unknown, nil, Options{Faults: []string{"kill"}, Runs: 2}); err != nil || rep.Found() || rep.Decided() != 0 || rep.Runs != 4 {
		t.Errorf("every run unknown: %v, found %v, %d of %d runs decided; want nothing found in none of 4", err, rep.Found(), rep.Decided(), rep.Runs)
	}
}

// TestSteeringSkipsUnknownRuns steers a campaign whose runs all come close
// to a violation (a margin of +0.01 lease): runs that held become parents
// of mutants, runs whose check ran out of its budget never do, so a kind
// whose every run was unknown draws every schedule at random.
func TestSteeringSkipsUnknownRuns(t *testing.T) {
	tests := []struct {
		name        string
		verdict     checker.Verdict
		wantSteered bool
	}{
		{name: "runs that held steer", verdict: checker.Valid, wantSteered: true},
		{name: "runs out of their check's budget do not", verdict: checker.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := func(context.Context, *scenarios.Scenario) (Outcome, error) {
				return Outcome{Verdict: tt.verdict, OutOfBudget: tt.verdict == checker.Unknown,
					Margins: []checker.Margin{{Key: "k", Lease: &checker.TimeMargin{Margin: 10 * time.Millisecond, Lease: time.Second}}}}, nil
			}
			rep, err := Campaign(context.Background(), base(), run, nil, Options{Faults: []string{"client-pause"}, Runs: 10, Steer: true, NoBaseline: true})
			if err != nil {
				t.Fatal(err)
			}
			if steered := rep.Rows[0].Steered; (steered > 0) != tt.wantSteered {
				t.Errorf("%d of 10 runs steered; want some: %v", steered, tt.wantSteered)
			}
		})
	}
}

// TestNotApplicableBeforeStart: a kind that the base's declared topology
// cannot take is known before anything of it runs: the campaign never
// calls its run function (which starts the cluster) for it, reports the
// kind not applicable with why, and counts none of its runs.
func TestNotApplicableBeforeStart(t *testing.T) {
	tests := []struct {
		name     string
		system   scenarios.System
		kind     string
		runs     bool
		contains string
	}{
		{"failover on one Redis", scenarios.System{Name: "redis", Nodes: 1}, "failover", false, "failover needs a replica node; redis/default (1 node) has none"},
		{"failover on three masters", scenarios.System{Name: "redis", Topology: "masters", Nodes: 3}, "failover", false, "needs a replica node"},
		{"failover with replicas", scenarios.System{Name: "redis", Topology: "primary-replica", Nodes: 3}, "failover", true, ""},
		{"sentinel failover without sentinels", scenarios.System{Name: "redis", Topology: "primary-replica", Nodes: 3}, "sentinel-failover", false, "needs a sentinel node"},
		{"sentinel failover with sentinels", scenarios.System{Name: "redis", Topology: "sentinel", Nodes: 3}, "sentinel-failover", true, ""},
		{"kill on one Redis", scenarios.System{Name: "redis", Nodes: 1}, "kill", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := base()
			b.System = tt.system
			var ran []string
			run := func(_ context.Context, sc *scenarios.Scenario) (Outcome, error) {
				ran = append(ran, kindOf(sc))
				return Outcome{Verdict: checker.Valid}, nil
			}
			var log strings.Builder
			rep, err := Campaign(context.Background(), b, run, nil, Options{Faults: []string{tt.kind}, Runs: 2, NoBaseline: true, Log: &log})
			if err != nil {
				t.Fatal(err)
			}
			row := rep.Rows[0]
			if tt.runs {
				if row.NotApplicable != "" || len(ran) != 2 {
					t.Errorf("row %+v, runs %v: want 2 runs of %s", row, ran, tt.kind)
				}
				return
			}
			if len(ran) != 0 || row.Runs != 0 || !strings.Contains(row.NotApplicable, tt.contains) || !strings.Contains(log.String(), "nothing started") {
				t.Errorf("row %+v, runs %v, log %q: want no run and not applicable: %s", row, ran, log.String(), tt.contains)
			}
		})
	}
}

// TestVariantLease checks the ttls and latency delays that 60 seeds draw:
// within the lease's bounds and in its steps, the base's and a sub-second
// one among them where the bounds allow, the same for a seed twice, the
// renewal a third of the run's ttl, the base's ttl alone for a FixedTTL
// lease, and for the latency kind alone a delay of ShortLatency, the
// default or LatencyShare of the run's ttl, each drawn.
func TestVariantLease(t *testing.T) {
	b := base()
	b.Lock.TTL = 2 * time.Second
	cases := []struct {
		name             string
		lease            Lease
		lo, hi, step     time.Duration
		subSecond, fixed bool
	}{
		{name: "no bound", lo: DefaultMinTTL, hi: 4 * time.Second, step: 10 * time.Millisecond, subSecond: true},
		{name: "whole seconds", lease: Lease{MinTTL: time.Second, TTLStep: time.Second}, lo: time.Second, hi: 4 * time.Second, step: time.Second},
		{name: "fixed", lease: Lease{FixedTTL: true}, lo: 2 * time.Second, hi: 2 * time.Second, step: time.Second, fixed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ttls := map[time.Duration]bool{}
			for s := uint64(1); s <= 60; s++ {
				v := Variant(b, "kill", s, tc.lease, nil)
				ttl := v.Lock.TTL
				if ttl < tc.lo || ttl > tc.hi || ttl%tc.step != 0 {
					t.Fatalf("seed %d: ttl %v, want %v..%v in steps of %v", s, ttl, tc.lo, tc.hi, tc.step)
				}
				if again := Variant(b, "kill", s, tc.lease, nil); again.Lock.TTL != ttl || again.Hold != v.Hold {
					t.Fatalf("seed %d drew ttl %v hold %v, then %v %v", s, ttl, v.Hold, again.Lock.TTL, again.Hold)
				}
				if v.Lock.Renew != 0 && v.Lock.Renew != (ttl/3).Round(10*time.Millisecond) {
					t.Errorf("seed %d: renew %v for a %v ttl, want a third of it", s, v.Lock.Renew, ttl)
				}
				if _, ok := Delay(v); ok {
					t.Errorf("seed %d: a kill schedule with a delay", s)
				}
				ttls[ttl] = true
			}
			sub := slices.ContainsFunc(slices.Collect(maps.Keys(ttls)), func(d time.Duration) bool { return d < time.Second })
			if !ttls[b.Lock.TTL] || sub != tc.subSecond || tc.fixed != (len(ttls) == 1) || (!tc.fixed && len(ttls) < 4) {
				t.Errorf("60 seeds drew ttls %v", slices.Sorted(maps.Keys(ttls)))
			}
		})
	}
	delays := map[string]bool{}
	for s := uint64(1); s <= 30; s++ {
		v := Variant(b, "latency", s, Lease{}, nil)
		d, ok := Delay(v)
		share := time.Duration(float64(v.Lock.TTL) * LatencyShare).Round(10 * time.Millisecond)
		if !ok || (d != ShortLatency.String() && d != nemesis.DefaultLatency.String() && d != share.String()) {
			t.Fatalf("seed %d: latency delay %q (drawn %v) for a %v ttl", s, d, ok, v.Lock.TTL)
		}
		delays[map[bool]string{true: "share", false: d}[d == share.String()]] = true
	}
	if len(delays) != 3 {
		t.Errorf("30 seeds drew delays %v, want all three", delays)
	}
}

// TestScheduleSpacesClusterFailovers checks that a hunt draws a Redis
// Cluster's failovers at least half of cluster.ClusterFailoverRetry apart,
// so that every other one (the same replica promoted again) comes at least
// the retry apart and Redis can run it, random and steered; and that a
// primary-replica topology, whose promotion has no such bound, draws them
// closer.
func TestScheduleSpacesClusterFailovers(t *testing.T) {
	for _, tt := range []struct {
		name     string
		topology string
		bound    bool
	}{
		{"cluster", cluster.TopologyCluster, true},
		{"primary-replica", cluster.TopologyPrimaryReplica, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := base()
			b.System.Topology, b.Duration = tt.topology, 20*time.Second
			closest := b.Duration
			for s := uint64(1); s <= 40; s++ {
				v := Variant(b, "failover", s, Lease{}, nil)
				steps := nemesis.Resolve(nil, v.Nemesis.Random, s, v.Duration)
				for i := 1; i < len(steps); i++ {
					closest = min(closest, steps[i].At-steps[i-1].At)
				}
				for i := 2; tt.bound && i < len(steps); i++ {
					if d := steps[i].At - steps[i-2].At; d < cluster.ClusterFailoverRetry {
						t.Errorf("seed %d: steps %d and %d %v apart, less than %v", s, i-2, i, d, cluster.ClusterFailoverRetry)
					}
				}
			}
			if got := closest >= cluster.ClusterFailoverRetry/2; got != tt.bound {
				t.Errorf("closest failovers %v apart; want them at least %v apart: %v", closest, cluster.ClusterFailoverRetry/2, tt.bound)
			}
			if got := NewSpace(b, "failover").Gap >= cluster.ClusterFailoverRetry/2; got != tt.bound {
				t.Errorf("steered failovers' gap %v; want at least %v: %v", NewSpace(b, "failover").Gap, cluster.ClusterFailoverRetry/2, tt.bound)
			}
		})
	}
}
