package nemesis

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// CheckTargets checks a step's targets against the nodes of the cluster it
// will run on (cluster.Layout) and the number of workers, before anything
// starts: node names and specs must resolve (n7 on one node, replicas where no
// node is a replica), worker targets must name workers there are (w9 of two),
// and network faults must not mix workers with nodes. It returns an error
// wrapping ErrTarget. What only the running cluster can tell (which links a
// topology has, whether a node can take a fault) is left to the run, which
// records a fault that could not take effect as failed. Which targets a
// fault takes is its Facts.Targets; heal, heal-all and faults that take none
// (sentinel-failover) have no targets to check.
func CheckTargets(step Step, nodes []cluster.Node, workers int) error {
	rng := rand.New(rand.NewPCG(1, 2)) // any source: only whether specs resolve matters
	f, err := Lookup(step.Fault)
	if err != nil {
		return nil // heal, heal-all, or a name the fault check reports
	}
	switch f.Facts().Targets {
	case TargetsLinks:
		// The client links every run has; node-to-node links depend on the
		// topology, so a selection of none is left to the run.
		var links []string
		for w := range workers {
			for _, n := range serverNodes(nodes) {
				links = append(links, linknet.Name(workerName(w), n.Name))
			}
		}
		if _, err := SelectLinks(step, nodes, links, workers, rng); errors.Is(err, ErrTarget) {
			return err
		}
	case TargetsNodes:
		_, err = ResolveNodes(step.Targets, nodes, rng)
	case TargetsReplica:
		if len(step.Targets) > 0 {
			_, err = ResolveNodes(step.Targets, nodes, rng)
		}
	case TargetsWorkers:
		_, err = ResolveWorkers(step.Targets, workers, rng)
	}
	return err
}

// CheckTargets checks the spec's node and worker target specs against the
// nodes of the cluster it will run on and the number of workers, as
// CheckTargets does a step's: each spec must resolve (halves needs two server
// nodes, a worker's name such as w0 in Targets, drawn for network faults,
// a worker). It returns an error wrapping ErrTarget.
func (s *RandomSpec) CheckTargets(nodes []cluster.Node, workers int) error {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, t := range s.Targets {
		if t == TargetHalves {
			if n := len(serverNodes(nodes)); n < 2 {
				return fmt.Errorf("%w: targets: halves needs at least 2 server nodes, the cluster has %d", ErrTarget, n)
			}
			continue
		}
		if IsWorkerTarget(t) {
			// a worker's links, drawn for network faults only
			if _, err := ResolveWorkers([]string{t}, workers, rng); err != nil {
				return fmt.Errorf("targets: %w", err)
			}
			continue
		}
		if _, err := ResolveNodes([]string{t}, nodes, rng); err != nil {
			return fmt.Errorf("targets: %w", err)
		}
	}
	for _, w := range s.Workers {
		if _, err := ResolveWorkers([]string{w}, workers, rng); err != nil {
			return fmt.Errorf("workers: %w", err)
		}
	}
	return nil
}
