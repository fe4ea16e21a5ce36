package local

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// BenchmarkColdStart measures starting a cluster until every node answers,
// plus one link per (worker, node) for five workers, as a run needs them.
// Teardown is not timed.
//
//	go test -run '^$' -bench ColdStart -benchtime 3x ./cluster/local/
func BenchmarkColdStart(b *testing.B) {
	_, pgErr := postgresBinDir()
	for _, tc := range cluster.Topologies {
		b.Run(tc.Name, func(b *testing.B) {
			if tc.Spec.System == cluster.Postgres && pgErr != nil {
				b.Skip(pgErr)
			}
			for b.Loop() {
				nw, err := cluster.NewNetwork()
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				c, err := Start(ctx, tc.Spec, nw)
				cancel()
				if err != nil {
					nw.Close()
					b.Fatal(err)
				}
				for w := range 5 {
					for _, n := range c.Nodes() {
						if _, err := nw.Link(linknet.Name(fmt.Sprintf("w%d", w), n.Name), n.Addr); err != nil {
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
