package nemesis

import (
	"context"

	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// Reset closes the links' connections at once (a TCP RST to both ends) and
// answers every packet of the links, new connections included, with a RST
// until healed. It is the one network fault that closes connections.
// Nothing gets through such a link, so, like a partition, it makes the
// nodes it cuts off unavailable until the heal.
type Reset struct{}

// Facts returns the reset's facts, declared in faultkind.Reset.
func (Reset) Facts() Facts {
	return faultkind.Reset()
}

// Name returns the fault's name.
func (f Reset) Name() string { return f.Facts().Name }

// Available reports whether the run has a network.
func (Reset) Available(env *Env) error { return networkAvailable(env) }

// Check checks the step's options.
func (Reset) Check(step Step) error { return checkLinkStep(step) }

// Inject resets the links the step's targets select.
func (Reset) Inject(_ context.Context, env *Env, step Step) (Heal, any, error) {
	return injectLinks(env, step, Reset{}.Facts(), linknet.Fault{Kind: linknet.FaultReset})
}
