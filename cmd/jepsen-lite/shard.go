package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// shard is one part of a gate's runs, for a CI fleet in which each machine
// runs one part (--shard i/n) and one job merges the stores (--from-store
// a,b,...). The zero shard is the whole.
type shard struct {
	index, count int // 1-based index of count parts; count 0 for the whole
}

// parseShard parses "i/n" with 1 <= i <= n; "" is the whole.
func parseShard(s string) (shard, error) {
	if s == "" {
		return shard{}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, erri := strconv.Atoi(a)
	n, errn := strconv.Atoi(b)
	if !ok || erri != nil || errn != nil || n < 1 || i < 1 || i > n {
		return shard{}, usagef("--shard %q: want i/n with 1 <= i <= n, such as 2/4", s)
	}
	return shard{index: i, count: n}, nil
}

// String returns "i/n", or "" for the whole.
func (s shard) String() string {
	if s.count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.index, s.count)
}

// gatePair is one run of a gate: a scenario and a seed.
type gatePair struct {
	sc   *scenarios.Scenario
	seed int
}

// expectedTime is what a run of sc takes, for balancing shards: its
// duration and quiet time, and a few seconds to start and check.
func expectedTime(sc *scenarios.Scenario) time.Duration {
	return sc.Duration + sc.Quiet + 5*time.Second
}

// split returns the pairs of selected × seeds 1..seeds that belong to s, in
// the gate's order (the selection's, then by seed). The split is a function
// of the selection and seeds alone, so every machine of a fleet given the
// same arguments computes the same parts, and together the parts hold every
// pair exactly once: the pairs, longest first (ties by scenario name, then
// seed), each go to the part with the least expected time so far (ties to the
// lowest part), so the parts take about as long as each other.
func (s shard) split(selected []*scenarios.Scenario, seeds int) []gatePair {
	var all []gatePair
	for _, sc := range selected {
		for seed := 1; seed <= seeds; seed++ {
			all = append(all, gatePair{sc, seed})
		}
	}
	if s.count <= 1 {
		return all
	}
	order := slices.Clone(all)
	slices.SortStableFunc(order, func(a, b gatePair) int {
		if d := expectedTime(b.sc) - expectedTime(a.sc); d != 0 {
			if d > 0 {
				return 1
			}
			return -1
		}
		if c := strings.Compare(a.sc.Name, b.sc.Name); c != 0 {
			return c
		}
		return a.seed - b.seed
	})
	load := make([]time.Duration, s.count)
	mine := map[gatePair]bool{}
	for _, p := range order {
		part := 0
		for i := range load {
			if load[i] < load[part] {
				part = i
			}
		}
		load[part] += expectedTime(p.sc)
		if part == s.index-1 {
			mine[p] = true
		}
	}
	var out []gatePair
	for _, p := range all {
		if mine[p] {
			out = append(out, p)
		}
	}
	return out
}
