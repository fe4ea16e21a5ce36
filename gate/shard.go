package gate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// Shard is one part of a gate's runs, for a CI fleet in which each machine
// runs one part (--shard i/n) and one job merges the stores (--from-store
// a,b,...). The zero Shard is the whole.
type Shard struct {
	Index, Count int // 1-based Index of Count parts; Count 0 for the whole
}

// ParseShard parses "i/n" with 1 <= i <= n; "" is the whole. A bad one is
// an InputError.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, erri := strconv.Atoi(a)
	n, errn := strconv.Atoi(b)
	if !ok || erri != nil || errn != nil || n < 1 || i < 1 || i > n {
		return Shard{}, InputError{fmt.Errorf("--shard %q: want i/n with 1 <= i <= n, such as 2/4", s)}
	}
	return Shard{Index: i, Count: n}, nil
}

// String returns "i/n", or "" for the whole.
func (s Shard) String() string {
	if s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Pair is one run of a gate: a scenario and a seed.
type Pair struct {
	Scenario *scenarios.Scenario
	Seed     int
}

// ExpectedTime is what a run of sc takes, for balancing shards: its
// duration and quiet time, and a few seconds to start and check.
func ExpectedTime(sc *scenarios.Scenario) time.Duration {
	return sc.Duration + sc.Quiet + 5*time.Second
}

// Split returns the pairs of selected × seeds 1..seeds that belong to s, in
// the gate's order (the selection's, then by seed). The split is a function
// of the selection and seeds alone, so every machine of a fleet given the
// same arguments computes the same parts, and together the parts hold every
// pair exactly once: the pairs, longest first (ties by scenario name, then
// seed), each go to the part with the least expected time so far (ties to the
// lowest part), so the parts take about as long as each other.
func (s Shard) Split(selected []*scenarios.Scenario, seeds int) []Pair {
	var all []Pair
	for _, sc := range selected {
		for seed := 1; seed <= seeds; seed++ {
			all = append(all, Pair{sc, seed})
		}
	}
	if s.Count <= 1 {
		return all
	}
	order := slices.Clone(all)
	slices.SortStableFunc(order, func(a, b Pair) int {
		if d := ExpectedTime(b.Scenario) - ExpectedTime(a.Scenario); d != 0 {
			if d > 0 {
				return 1
			}
			return -1
		}
		if c := strings.Compare(a.Scenario.Name, b.Scenario.Name); c != 0 {
			return c
		}
		return a.Seed - b.Seed
	})
	load := make([]time.Duration, s.Count)
	mine := map[Pair]bool{}
	for _, p := range order {
		part := 0
		for i := range load {
			if load[i] < load[part] {
				part = i
			}
		}
		load[part] += ExpectedTime(p.Scenario)
		if part == s.Index-1 {
			mine[p] = true
		}
	}
	var out []Pair
	for _, p := range all {
		if mine[p] {
			out = append(out, p)
		}
	}
	return out
}
