package nemesis

import (
	"context"
	"fmt"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// ClockBump jumps the wall clock of target nodes by the step's Offset; the
// heal (clock-reset) sets the offset back to zero. Nodes whose clock cannot
// be skewed (Go binaries such as etcd) make it fail with an error wrapping
// cluster.ErrUnavailable.
// A node with a skewed clock is still up and reachable: the fault makes no
// node unavailable (its leases may end early or late, which the checkers
// judge).
type ClockBump struct{}

// Facts returns the clock bump's facts, declared in faultkind.ClockBump, on the
// systems whose clocks can be skewed (clockSystems).
func (ClockBump) Facts() Facts {
	return onClockSystems(faultkind.ClockBump())
}

// Name returns the fault's name.
func (f ClockBump) Name() string { return f.Facts().Name }

// Available reports whether the cluster can skew clocks.
func (f ClockBump) Available(env *Env) error { return clockAvailable(env, f.Facts()) }

// Check requires an offset.
func (ClockBump) Check(step Step) error { return checkClockStep(step) }

// Inject skews every target node's clock.
func (ClockBump) Inject(_ context.Context, env *Env, step Step) (Heal, any, error) {
	sk := env.Cluster.(cluster.ClockSkewer)
	if step.Offset == 0 {
		return nil, nil, fmt.Errorf("%w: clock-bump needs an offset", ErrOption)
	}
	nodes, err := ResolveNodes(step.Targets, env.Cluster.Nodes(), env.Rand)
	if err != nil {
		return nil, nil, err
	}
	desc := map[string]any{"nodes": nodes, "offset": signed(step.Offset)}
	done, err := setClocks(sk, nodes, step.Offset)
	if len(done) == 0 {
		return nil, desc, err
	}
	heal := func(context.Context) error { return resetClocks(sk, done) }
	return heal, desc, err
}
