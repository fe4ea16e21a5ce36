package conformance

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

func TestBackendCheck(t *testing.T) {
	start := func(context.Context, cluster.Spec, *linknet.Network) (cluster.Cluster, error) { return nil, nil }
	leftovers := func(cluster.Cluster) func() []string { return func() []string { return nil } }
	good := Backend{Name: "b", Start: start, Systems: []string{cluster.Redis}, Leftovers: leftovers}
	tests := []struct {
		name   string
		change func(*Backend)
		want   string // a part of the error; "" for none
	}{
		{"complete", func(*Backend) {}, ""},
		{"with a reasoned ability it lacks", func(b *Backend) { b.Cannot = map[Ability]string{Follow: "no Follow"} }, ""},
		{"no name", func(b *Backend) { b.Name = "" }, "Name is empty"},
		{"no start", func(b *Backend) { b.Start = nil }, "Start is nil"},
		{"no leftovers", func(b *Backend) { b.Leftovers = nil }, "Leftovers is nil"},
		{"no systems", func(b *Backend) { b.Systems = nil }, "Systems is empty"},
		{"unknown system", func(b *Backend) { b.Systems = []string{"mongodb"} }, `unknown system "mongodb"`},
		{"unknown ability", func(b *Backend) { b.Cannot = map[Ability]string{"fly": "no wings"} }, `unknown ability "fly"`},
		{"ability without a reason", func(b *Backend) { b.Cannot = map[Ability]string{Pause: " "} }, `no reason for "pause"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := good
			tt.change(&b)
			err := b.check()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("check: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("check: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestCoverage requires the suite to start every declared system in every
// declared topology.
func TestCoverage(t *testing.T) {
	if err := coverage(); err != nil {
		t.Fatal(err)
	}
}

// TestTopologies checks the suite's own table: every system has a probe
// and topologies, every topology a cluster.Layout of its system, a start
// case first and unique case names.
func TestTopologies(t *testing.T) {
	for _, sys := range systems {
		t.Run(sys.name, func(t *testing.T) {
			if sys.probe.answer == nil || sys.probe.write == nil || sys.probe.read == nil {
				t.Errorf("%s's probe cannot answer, write and read", sys.name)
			}
			if len(sys.topologies) == 0 {
				t.Fatalf("%s has no topology", sys.name)
			}
			for _, top := range sys.topologies {
				if top.spec.System != sys.name {
					t.Errorf("%s: spec of system %q", top.name, top.spec.System)
				}
				if _, err := cluster.Layout(top.spec); err != nil {
					t.Errorf("%s: %v", top.name, err)
				}
				if len(top.cases) == 0 || top.cases[0].name != startCase.name {
					t.Errorf("%s: the first case is not %q", top.name, startCase.name)
				}
				seen := map[string]bool{}
				for _, c := range top.cases {
					if seen[c.name] {
						t.Errorf("%s: case %q twice", top.name, c.name)
					}
					seen[c.name] = true
				}
			}
		})
	}
}

// TestTodaysTopology checks the sample of a Sampled run: one topology a
// day, of the systems it tests only, each of them once in as many days as
// there are; none when the run is not sampled.
func TestTodaysTopology(t *testing.T) {
	tests := []struct {
		name    string
		backend Backend
		want    []string // the systems whose topologies the sample takes
	}{
		{"not sampled", Backend{Systems: []string{cluster.Redis, cluster.Etcd}}, nil},
		{"every system", Backend{Systems: []string{cluster.Redis, cluster.Etcd, cluster.ZooKeeper}, Sampled: true}, []string{cluster.Redis, cluster.Etcd, cluster.ZooKeeper}},
		{"only some", Backend{Systems: []string{cluster.Redis, cluster.Etcd}, Only: []string{cluster.Etcd}, Sampled: true}, []string{cluster.Etcd}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []string
			for _, sys := range systems {
				if slices.Contains(tt.want, sys.name) {
					for _, top := range sys.topologies {
						want = append(want, sys.name+"/"+top.name)
					}
				}
			}
			seen := map[string]int{}
			for day := 1; day <= max(len(want), 1); day++ {
				if got := tt.backend.TodaysTopology(day); got != "" {
					seen[got]++
				}
			}
			if len(want) == 0 && len(seen) > 0 {
				t.Fatalf("unsampled run took %v", seen)
			}
			for _, w := range want {
				if seen[w] != 1 {
					t.Errorf("%s tested on %d of %d days, want 1 (%v)", w, seen[w], len(want), seen)
				}
			}
			if len(seen) != len(want) {
				t.Errorf("sampled %v, want exactly %v", seen, want)
			}
		})
	}
}
