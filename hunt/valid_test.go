package hunt_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestMutantsValidate holds every mutant of the schedules a campaign draws
// to the run's own validation (runner.Validate: its fault targets against
// the cluster's nodes and the workers, the lock's capabilities) and to the
// scenario's (scenarios.Parse of it written out: each step's fault, time,
// options and system), for every fault kind of a one-node, a five-node and
// a ZooKeeper baseline.
func TestMutantsValidate(t *testing.T) {
	start := func(context.Context, cluster.Spec, *linknet.Network) (cluster.Cluster, error) {
		return nil, errors.New("nothing starts")
	}
	validate := func(sc *scenarios.Scenario) error { return runner.Validate(sc, runner.WithBackend(start)) }
	for _, name := range []string{"redis-single-baseline", "redlock-baseline", "zk-lock-baseline"} {
		base, err := scenarios.Load(name, runner.Names())
		if err != nil {
			t.Fatal(err)
		}
		kinds, err := hunt.Kinds(base.System.Name, "local", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range kinds {
			t.Run(name+"/"+kind, func(t *testing.T) {
				sp := hunt.NewSpace(base, kind)
				rng := rand.New(rand.NewPCG(3, 4))
				parent := hunt.Variant(base, kind, 1, hunt.Lease{}, validate)
				if err := validate(parent); err != nil {
					t.Fatalf("the random schedule of %s: %v", kind, err)
				}
				s := hunt.Resolved(parent)
				for i := range 40 {
					m, what, ok := hunt.Mutate(rng, s, sp)
					if !ok {
						t.Fatalf("no mutation of %v fits", s)
					}
					mutant := hunt.Mutant(parent, m, uint64(i+2))
					if err := validate(mutant); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					data, err := scenarios.Marshal(mutant)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := scenarios.Parse(data, "mutant.yaml", runner.Names()); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					s = m
				}
			})
		}
	}
}
