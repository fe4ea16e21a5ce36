package hunt

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// Steering (Options.Steer) is coverage-guided fuzzing with the safety
// margin (docs/history.md §4.8) for coverage: a fault kind's runs so far
// form a corpus ordered by how close each came to a violation, and a run
// mutates the schedule of one of the closest instead of drawing afresh.

// SteerProbability is the chance that a steered run mutates the schedule
// of one of the SteerBest runs of its kind with the smallest margins rather
// than drawing a random schedule.
const SteerProbability = 0.8

// SteerBest is how many of the corpus's runs, those with the smallest
// margins, a steered run picks its parent from (uniformly).
const SteerBest = 3

// steerStream distinguishes the steering's random streams from the other
// streams derived from the campaign's seed.
const steerStream = 0x7374656572 // "steer"

// steerRand returns the steering's random stream for fault kind's runs,
// from the campaign's seed and the kind's name: one stream per kind, so
// that a kind's steered runs are the same whichever kinds run before it,
// in the whole campaign or in a part of it (Shard).
func steerRand(seed uint64, kind string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(kind))
	return rand.New(rand.NewPCG(seed, steerStream^h.Sum64()))
}

// Score is the smallest normalised margin of a run's margins
// (checker.Margin.Normalized, a time margin in lease lengths, ttl standing
// for a lease the margin does not name), so that keys and runs compare;
// false when no margin applied to any key.
func Score(ms []checker.Margin, ttl time.Duration) (float64, bool) {
	best, ok := 0.0, false
	for _, m := range ms {
		if v, has := m.Normalized(ttl); has && (!ok || v < best) {
			best, ok = v, true
		}
	}
	return best, ok
}

// FormatMargin renders a normalised margin ("+0.020", "-0.300"), "-∞" for
// a hold that could not end (checker.MarginNeverEnded), or "-" for none.
func FormatMargin(v float64, ok bool) string {
	switch {
	case !ok:
		return "-"
	case v == checker.MarginNeverEnded:
		return "-∞"
	}
	return fmt.Sprintf("%+.3f", v)
}

// Entry is one run of a campaign as the corpus keeps it.
type Entry struct {
	// Scenario is the run's scenario; Schedule the faults it ran (its
	// random schedule resolved with its seed).
	Scenario *scenarios.Scenario
	Schedule nemesis.Schedule
	// Margin is the run's smallest normalised margin (Score); HasMargin
	// is false when none applied.
	Margin    float64
	HasMargin bool
	// Order is the run's place among its kind's runs, from 0.
	Order int
	Dir   string
}

// Corpus is a fault kind's runs ordered by their smallest margin: the
// runs that came closest to a violation (or had one) first, the runs
// without a margin last, and runs of equal margin in the order they ran.
type Corpus struct{ entries []Entry }

// compareEntries is the corpus's order.
func compareEntries(a, b Entry) int {
	if a.HasMargin != b.HasMargin {
		if a.HasMargin {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(a.Margin, b.Margin), cmp.Compare(a.Order, b.Order))
}

// Add puts e in its place.
func (c *Corpus) Add(e Entry) {
	i, _ := slices.BinarySearchFunc(c.entries, e, compareEntries)
	c.entries = slices.Insert(c.entries, i, e)
}

// Len is the number of runs in the corpus.
func (c *Corpus) Len() int { return len(c.entries) }

// Best returns the k runs with the smallest margins (fewer when the corpus
// has fewer), closest first.
func (c *Corpus) Best(k int) []Entry { return c.entries[:min(k, len(c.entries))] }

// Parents returns the k runs that a steered run may mutate: those with the
// smallest margins among the runs that have one, closest first (fewer when
// fewer have one). A run without a margin tells nothing of how close it
// came to a violation, so it is never a parent: a corpus of such runs
// alone steers nothing, and the run is drawn at random.
func (c *Corpus) Parents(k int) []Entry {
	n := 0
	for n < len(c.entries) && n < k && c.entries[n].HasMargin {
		n++
	}
	return c.entries[:n]
}

// Space is what a mutation of a fault kind's schedule may draw from: the
// bounds of the kind's random schedules (Schedule) on the base scenario,
// and every target of the kind's among the cluster's nodes and the
// workers.
type Space struct {
	Kind string
	// Duration is the run's length: every fault starts at Start or later
	// and before Duration.
	Duration, Start time.Duration
	// MinDuration and MaxDuration bound a fault's length (a moment has
	// none).
	MinDuration, MaxDuration time.Duration
	Moment                   bool
	// Gap is the least quiet time between one fault's heal and the next
	// fault; Shift the most a start moves either way.
	Gap, Shift time.Duration
	// Targets are the targets a step of the kind may name, one at a
	// time (nil for a kind that takes none): the random schedule's specs
	// (one, minority, majority, and w0 for a network fault) and, on two
	// server nodes or more, every server node by name (and halves, for a
	// network fault), for a network fault every worker by name, or for a
	// worker fault one and every worker by name.
	Targets []string
	// Offsets are the clock offsets of a clock fault (nil for another).
	Offsets []time.Duration
	// Options are the kind's fixed options, Choices the options drawn
	// per step and Points the pause points drawn (Schedule's).
	Options map[string]string
	Choices map[string][]string
	Points  []string
	// Delays are the latency delays a run of the latency kind may draw
	// for its parent's ttl (Of; nil for another kind): a mutation may give
	// every fault of the schedule another of them.
	Delays []string
}

// NewSpace returns the space of kind's schedules on base.
func NewSpace(base *scenarios.Scenario, kind string) Space {
	spec := Schedule(base, kind)
	f, _ := nemesis.FactsOf(kind)
	sp := Space{Kind: kind, Duration: base.Duration, Start: spec.Start, MinDuration: spec.MinDuration, MaxDuration: spec.MaxDuration,
		Moment: f.Moment, Gap: spec.Interval / 2, Shift: spec.Interval, Options: spec.Options[kind], Choices: spec.Choices[kind], Points: spec.Points}
	switch f.Targets {
	case nemesis.TargetsWorkers:
		sp.Targets = slices.Clone(spec.Workers)
		for w := range base.Processes() {
			sp.Targets = append(sp.Targets, fmt.Sprintf("w%d", w))
		}
	case nemesis.TargetsNodes, nemesis.TargetsLinks:
		sp.Targets = slices.Clone(spec.Targets)
		nodes, _ := cluster.Layout(cluster.Spec{System: base.System.Name, Topology: base.System.Topology, Nodes: base.System.Nodes})
		var servers []string
		for _, n := range nodes {
			if n.Role != cluster.RoleSentinel {
				servers = append(servers, n.Name)
			}
		}
		if len(servers) >= 2 { // one node is the node "one" names
			sp.Targets = append(sp.Targets, servers...)
		}
		if f.Targets == nemesis.TargetsLinks && len(servers) >= 2 {
			sp.Targets = append(sp.Targets, nemesis.TargetHalves)
		}
		if f.Targets == nemesis.TargetsLinks {
			for w := range base.Processes() {
				if name := fmt.Sprintf("w%d", w); !slices.Contains(sp.Targets, name) {
					sp.Targets = append(sp.Targets, name)
				}
			}
		}
	}
	if f.Offset {
		sp.Offsets = slices.Clone(spec.Offsets)
	}
	return sp
}

// Of returns sp for the mutations of parent's schedule: a fault added
// takes the delay of parent's latency faults (Delay), so that a mutant
// keeps its parent's delay as it keeps its ttl and hold (Mutant).
func (sp Space) Of(parent *scenarios.Scenario) Space {
	if d, ok := Delay(parent); ok {
		sp.Options = maps.Clone(sp.Options)
		if sp.Options == nil {
			sp.Options = map[string]string{}
		}
		sp.Options["delay"] = d
		for _, v := range latencyDelays(parent.Lock.TTL) {
			if !slices.Contains(sp.Delays, v.String()) {
				sp.Delays = append(sp.Delays, v.String())
			}
		}
	}
	return sp
}

// Fits says why schedule s is not one of sp's, nil when it is: at least
// one fault, each of sp's kind, starting within the run no earlier than
// Start, lasting within sp's bounds, naming one of sp's targets and
// offsets, one at a time with a quiet gap of at least Gap between them.
func Fits(s nemesis.Schedule, sp Space) error {
	if len(s) == 0 {
		return fmt.Errorf("hunt: a schedule of %s without a fault", sp.Kind)
	}
	for i, st := range s {
		lo, hi := sp.MinDuration, sp.MaxDuration
		if sp.Moment {
			lo, hi = 0, 0
		}
		switch {
		case st.Fault != sp.Kind:
			return fmt.Errorf("hunt: step %d: fault %s in a schedule of %s", i, st.Fault, sp.Kind)
		case st.At < sp.Start || st.At >= sp.Duration:
			return fmt.Errorf("hunt: step %d: at %v, outside [%v, %v)", i, st.At, sp.Start, sp.Duration)
		case st.Duration < lo || st.Duration > hi:
			return fmt.Errorf("hunt: step %d: lasts %v, outside [%v, %v]", i, st.Duration, lo, hi)
		case sp.Targets == nil && len(st.Targets) > 0 || sp.Targets != nil && (len(st.Targets) != 1 || !slices.Contains(sp.Targets, st.Targets[0])):
			return fmt.Errorf("hunt: step %d: targets %v, want one of %v", i, st.Targets, sp.Targets)
		case sp.Offsets == nil && st.Offset != 0 || sp.Offsets != nil && !slices.Contains(sp.Offsets, st.Offset):
			return fmt.Errorf("hunt: step %d: offset %v, want one of %v", i, st.Offset, sp.Offsets)
		case i > 0 && st.At < s[i-1].At+s[i-1].Duration+sp.Gap:
			return fmt.Errorf("hunt: step %d at %v: less than %v after the fault before it ends", i, st.At, sp.Gap)
		}
	}
	return nil
}

// The mutations.
const (
	MutateShift    = "shift"
	MutateRetarget = "retarget"
	MutateAdd      = "add"
	MutateDrop     = "drop"
	MutateDelay    = "delay"
)

// mutateTries is how many mutations Mutate draws before it gives up.
const mutateTries = 20

// Mutate returns a mutation of s, a schedule of sp, drawn from rng, and
// what it did: one fault shifted (its start moved by up to Shift either
// way, its length scaled by 1/2 to 2 within sp's bounds), retargeted
// (another of sp's targets, or offsets for a clock fault), a fault of sp's
// kind added, one dropped (when there are two or more), or, for latency,
// every fault's delay changed to another of sp's Delays. A mutation
// whose schedule does not fit sp (Fits: faults that overlap, a start out of
// the run) or that changes nothing is drawn again, up to mutateTries
// times; ok is false when none fitted.
func Mutate(rng *rand.Rand, s nemesis.Schedule, sp Space) (out nemesis.Schedule, what string, ok bool) {
	kinds := []string{MutateShift, MutateAdd}
	if len(sp.Targets) >= 2 || len(sp.Offsets) >= 2 {
		kinds = append(kinds, MutateRetarget)
	}
	if len(s) >= 2 {
		kinds = append(kinds, MutateDrop)
	}
	if len(sp.Delays) >= 2 {
		kinds = append(kinds, MutateDelay)
	}
	if len(s) == 0 {
		kinds = []string{MutateAdd}
	}
	for range mutateTries {
		out, what = mutateOnce(rng, s, sp, kinds[rng.IntN(len(kinds))])
		if Fits(out, sp) == nil && !slices.EqualFunc(out, s, sameStep) {
			return out, what, true
		}
	}
	return nil, "", false
}

// mutateOnce applies mutation m to a copy of s.
func mutateOnce(rng *rand.Rand, s nemesis.Schedule, sp Space, m string) (nemesis.Schedule, string) {
	out := make(nemesis.Schedule, len(s))
	for i, st := range s {
		st.Targets, st.Options = slices.Clone(st.Targets), maps.Clone(st.Options)
		out[i] = st
	}
	switch m {
	case MutateAdd:
		st := sp.step(rng)
		return append(out, st).Sorted(), "add " + st.String()
	case MutateDelay:
		was := out[0].Options["delay"]
		d := other(rng, sp.Delays, []string{was})
		for i := range out {
			if out[i].Options == nil {
				out[i].Options = map[string]string{}
			}
			out[i].Options["delay"] = d
		}
		return out, fmt.Sprintf("delay %s: %s", was, d)
	}
	i := rng.IntN(len(out))
	st := &out[i]
	was := st.String()
	switch m {
	case MutateShift:
		st.At = max(sp.Start, st.At+msIn(rng, -sp.Shift, sp.Shift))
		if !sp.Moment {
			st.Duration = min(max(msIn(rng, st.Duration/2, 2*st.Duration), sp.MinDuration), sp.MaxDuration)
		}
	case MutateRetarget:
		if len(sp.Targets) >= 2 && (len(sp.Offsets) < 2 || rng.IntN(2) == 0) {
			st.Targets = []string{other(rng, sp.Targets, st.Targets)}
		} else {
			st.Offset = sp.Offsets[rng.IntN(len(sp.Offsets))]
		}
	case MutateDrop:
		return slices.Delete(out, i, i+1), "drop " + was
	}
	return out.Sorted(), fmt.Sprintf("%s %s: %s", m, was, st)
}

// step draws a fault of sp's kind: its start, length, target, offset,
// pause point and drawn options.
func (sp Space) step(rng *rand.Rand) nemesis.Step {
	st := nemesis.Step{At: msIn(rng, sp.Start, sp.Duration-time.Millisecond), Fault: sp.Kind, Options: maps.Clone(sp.Options)}
	if !sp.Moment {
		st.Duration = msIn(rng, sp.MinDuration, sp.MaxDuration)
	}
	if len(sp.Targets) > 0 {
		st.Targets = []string{sp.Targets[rng.IntN(len(sp.Targets))]}
	}
	if len(sp.Offsets) > 0 {
		st.Offset = sp.Offsets[rng.IntN(len(sp.Offsets))]
	}
	if len(sp.Points) > 0 {
		st.Point = sp.Points[rng.IntN(len(sp.Points))]
	}
	for _, k := range slices.Sorted(maps.Keys(sp.Choices)) {
		if st.Options == nil {
			st.Options = map[string]string{}
		}
		st.Options[k] = sp.Choices[k][rng.IntN(len(sp.Choices[k]))]
	}
	return st
}

// msIn draws a whole number of milliseconds in [lo, hi].
func msIn(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	a, b := lo.Milliseconds(), hi.Milliseconds()
	if b <= a {
		return time.Duration(a) * time.Millisecond
	}
	return time.Duration(a+rng.Int64N(b-a+1)) * time.Millisecond
}

// other draws one of choices that is not the current target, when there
// is one.
func other(rng *rand.Rand, choices, current []string) string {
	var rest []string
	for _, c := range choices {
		if !slices.Contains(current, c) {
			rest = append(rest, c)
		}
	}
	if len(rest) == 0 {
		return choices[0]
	}
	return rest[rng.IntN(len(rest))]
}

// sameStep reports whether two steps are the same fault, in one line.
func sameStep(a, b nemesis.Step) bool { return a.String() == b.String() }

// Mutant returns the scenario of a steered run: parent's (its workload
// too) with the exact schedule steps and seed.
func Mutant(parent *scenarios.Scenario, steps nemesis.Schedule, seed uint64) *scenarios.Scenario {
	sc := *parent
	sc.Tags = slices.Clone(parent.Tags)
	sc.Seed = seed
	sc.Nemesis = scenarios.Nemesis{Steps: steps}
	return &sc
}

// Resolved is the schedule a run of sc runs: its steps, with its random
// schedule expanded by its seed (nemesis.Resolve).
func Resolved(sc *scenarios.Scenario) nemesis.Schedule {
	return nemesis.Resolve(sc.Nemesis.Steps, sc.Nemesis.Random, sc.Seed, sc.Duration)
}
