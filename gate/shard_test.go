package gate

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

func TestParseShard(t *testing.T) {
	tests := []struct {
		in   string
		want Shard
		bad  bool
	}{
		{in: "", want: Shard{}},
		{in: "1/1", want: Shard{1, 1}},
		{in: "2/4", want: Shard{2, 4}},
		{in: "0/4", bad: true},
		{in: "5/4", bad: true},
		{in: "1/0", bad: true},
		{in: "2", bad: true},
		{in: "a/b", bad: true},
		{in: "-1/2", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseShard(tt.in)
			if (err != nil) != tt.bad || (!tt.bad && got != tt.want) {
				t.Fatalf("ParseShard(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.bad)
			}
		})
	}
}

// TestShardSplitCoversEveryPairOnce splits the whole catalog over three
// seeds into 1 to 7 parts: the parts are disjoint, together they are the
// whole in the gate's order, the same arguments give the same parts, and no
// part expects to take longer than another by more than its longest run.
func TestShardSplitCoversEveryPairOnce(t *testing.T) {
	cat, err := scenarios.Catalog(runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	const seeds = 3
	whole := Shard{}.Split(cat, seeds)
	if len(whole) != len(cat)*seeds {
		t.Fatalf("the whole has %d pairs, want %d", len(whole), len(cat)*seeds)
	}
	var longest time.Duration
	for _, sc := range cat {
		longest = max(longest, ExpectedTime(sc))
	}
	for n := 1; n <= 7; n++ {
		t.Run(fmt.Sprintf("%d parts", n), func(t *testing.T) {
			seen := map[Pair]int{}
			var loads []time.Duration
			for i := 1; i <= n; i++ {
				part := Shard{i, n}.Split(cat, seeds)
				if again := (Shard{i, n}).Split(cat, seeds); !slices.Equal(part, again) {
					t.Fatalf("part %d/%d differs between two calls", i, n)
				}
				var load time.Duration
				for _, p := range part {
					seen[p]++
					load += ExpectedTime(p.Scenario)
				}
				loads = append(loads, load)
				// Within a part, the gate's order.
				pos := func(p Pair) int { return slices.Index(whole, p) }
				if !slices.IsSortedFunc(part, func(a, b Pair) int { return pos(a) - pos(b) }) {
					t.Errorf("part %d/%d is not in the gate's order", i, n)
				}
			}
			for _, p := range whole {
				if seen[p] != 1 {
					t.Errorf("%s seed %d is in %d parts, want 1", p.Scenario.Name, p.Seed, seen[p])
				}
			}
			if d := slices.Max(loads) - slices.Min(loads); d > longest {
				t.Errorf("parts' expected times %v differ by %v, more than the longest run %v", loads, d, longest)
			}
		})
	}
}
