package nemesis

import (
	"context"

	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// The values of the direction option of the partition fault.
const (
	// DirectionBoth drops the packets of both sides (the default).
	DirectionBoth = "both"
	// DirectionInbound drops only what is sent to the isolated side (the
	// targeted nodes, the targeted workers, the minority of halves).
	DirectionInbound = "inbound"
	// DirectionOutbound drops only what the isolated side sends.
	DirectionOutbound = "outbound"
)

// Partition cuts links like a cut cable, in the kernel: the packets of the
// links' connections are dropped (in both directions, or in one with option
// direction), connections stay open and the senders' TCP retransmits what
// it sent; new connections hang in their handshake. Its heal lets the next
// retransmission through: what waited is delivered, and no connection is
// closed by the heal. A connection ends during a cut only as the OS ends
// it (retransmission timeout, keepalive, TCP_USER_TIMEOUT; see
// docs/network.md). The nodes it cuts off are unavailable until the heal
// (LinkSelection.CutOff): a node counts as up only while every worker and
// its peers reach it.
type Partition struct{}

// Facts returns the partition's facts, declared in faultkind.Partition.
func (Partition) Facts() Facts {
	return faultkind.Partition()
}

// Name returns the fault's name.
func (f Partition) Name() string { return f.Facts().Name }

// Available reports whether the run has a network.
func (Partition) Available(env *Env) error { return networkAvailable(env) }

// Check checks the step's options.
func (Partition) Check(step Step) error {
	if err := checkOptions(step, []string{"links", "nodes", "direction"}); err != nil {
		return err
	}
	if _, err := choiceOption(step, "links", LinksAll, LinksClients, LinksNodes); err != nil {
		return err
	}
	_, err := choiceOption(step, "direction", DirectionBoth, DirectionInbound, DirectionOutbound)
	return err
}

// Inject cuts the links the step's targets select.
func (Partition) Inject(_ context.Context, env *Env, step Step) (Heal, any, error) {
	return injectLinks(env, step, Partition{}.Facts(), linknet.Fault{Kind: linknet.FaultCut})
}
