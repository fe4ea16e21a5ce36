package runner_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/runner"
)

// TestLayoutIsWhatStarts starts a real cluster of each system and topology
// and requires its nodes, by name and role, to be those cluster.Layout says,
// which scenarios check fault targets against before anything starts.
func TestLayoutIsWhatStarts(t *testing.T) {
	specs := []struct {
		name string
		spec cluster.Spec
	}{
		{"redis masters", cluster.Spec{System: cluster.Redis, Nodes: 3}},
		{"redis primary-replica", cluster.Spec{System: cluster.Redis, Topology: "primary-replica", Nodes: 2}},
		{"redis sentinel", cluster.Spec{System: cluster.Redis, Topology: "sentinel", Nodes: 2}},
		{"postgres", cluster.Spec{System: cluster.Postgres}},
		{"zookeeper", cluster.Spec{System: cluster.ZooKeeper, Nodes: 3}},
		{"etcd", cluster.Spec{System: cluster.Etcd, Nodes: 3}},
	}
	describe := func(nodes []cluster.Node) []string {
		var out []string
		for _, n := range nodes {
			out = append(out, n.Name+"/"+n.Role)
		}
		return out
	}
	for _, tc := range specs {
		t.Run(tc.name, func(t *testing.T) {
			want, err := cluster.Layout(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			nw, err := cluster.NewNetwork()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nw.Close() })
			tc.spec.LogDir = t.TempDir()
			c, err := runner.LocalBackend(context.Background(), tc.spec, nw)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			if got := describe(c.Nodes()); !slices.Equal(got, describe(want)) {
				t.Fatalf("started nodes %v, Layout says %v", got, describe(want))
			}
		})
	}
}
