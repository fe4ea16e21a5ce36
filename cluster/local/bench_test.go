package local

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// BenchmarkColdStart measures starting a cluster until every node answers,
// plus one link per (worker, node) for five workers, as a run needs them.
// Teardown is not timed.
//
//	go test -run '^$' -bench ColdStart -benchtime 3x ./cluster/local/
func BenchmarkColdStart(b *testing.B) {
	_, pgErr := postgresBinDir()
	cases := []struct {
		name string
		spec cluster.Spec
		skip string
	}{
		{"redis-5-masters", cluster.Spec{System: cluster.Redis, Nodes: 5}, ""},
		{"redis-primary-replica", cluster.Spec{System: cluster.Redis, Topology: TopologyPrimaryReplica, Nodes: 2}, ""},
		{"redis-sentinel", cluster.Spec{System: cluster.Redis, Topology: TopologySentinel, Nodes: 2}, ""},
		{"postgres", cluster.Spec{System: cluster.Postgres, Nodes: 1}, errString(pgErr)},
		{"zookeeper-1", cluster.Spec{System: cluster.ZooKeeper, Nodes: 1}, ""},
		{"zookeeper-3", cluster.Spec{System: cluster.ZooKeeper, Nodes: 3}, ""},
		{"etcd-1", cluster.Spec{System: cluster.Etcd, Nodes: 1}, ""},
		{"etcd-3", cluster.Spec{System: cluster.Etcd, Nodes: 3}, ""},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			if tc.skip != "" {
				b.Skip(tc.skip)
			}
			for b.Loop() {
				nw, err := cluster.NewNetwork()
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				c, err := Start(ctx, tc.spec, nw)
				cancel()
				if err != nil {
					nw.Close()
					b.Fatal(err)
				}
				for w := range 5 {
					for _, n := range c.Nodes() {
						if _, err := nw.Link(cluster.LinkName(fmt.Sprintf("w%d", w), n.Name), n.Addr); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.StopTimer()
				if err := c.Close(); err != nil {
					b.Error(err)
				}
				nw.Close()
				b.StartTimer()
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
