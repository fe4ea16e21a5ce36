package nemesis

import (
	"context"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// DefaultLatency is the delay of a latency step without a delay option.
const DefaultLatency = 100 * time.Millisecond

// Latency delays the replies on links by the delay option (default
// DefaultLatency) plus or minus the jitter option (default 0). It needs the
// run's links to go through proxies (the runner does so when a step of the
// schedule is a latency step: Facts.Proxies). A slow node is still up and reachable:
// latency makes no node unavailable.
type Latency struct{}

// Facts returns the latency's facts, declared in faultkind.Latency.
func (Latency) Facts() Facts {
	return faultkind.Latency()
}

// Name returns the fault's name.
func (f Latency) Name() string { return f.Facts().Name }

// Available reports whether the run has a network.
func (Latency) Available(env *Env) error { return networkAvailable(env) }

// Check checks the step's options.
func (Latency) Check(step Step) error { return checkLinkStep(step, "delay", "jitter") }

// Inject delays the links the step's targets select.
func (Latency) Inject(_ context.Context, env *Env, step Step) (Heal, any, error) {
	delay, err := durationOption(step, "delay", DefaultLatency)
	if err != nil {
		return nil, nil, err
	}
	jitter, err := durationOption(step, "jitter", 0)
	if err != nil {
		return nil, nil, err
	}
	return injectLinks(env, step, Latency{}.Facts(), linknet.Fault{Kind: linknet.FaultLatency, Delay: delay, Jitter: jitter})
}
