package conformance

import (
	"context"
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
