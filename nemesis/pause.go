package nemesis

import (
	"context"
	"fmt"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// Pause stops target nodes (SIGSTOP, docker pause) until healed; the heal
// resumes them. A paused server still accepts TCP connections; what clients
// send is answered after the resume. A paused node is unavailable: it is
// taken down as it is paused (never, when its pause fails) and brought back
// once it is resumed (a node whose resume fails stays down).
type Pause struct{}

// Facts returns the pause's facts, declared in faultkind.Pause.
func (Pause) Facts() Facts {
	return faultkind.Pause()
}

// Name returns the fault's name.
func (f Pause) Name() string { return f.Facts().Name }

// Available reports whether the cluster can pause nodes.
func (Pause) Available(env *Env) error {
	if _, ok := env.Cluster.(cluster.Pauser); !ok {
		return fmt.Errorf("%w: the cluster cannot pause nodes", cluster.ErrUnavailable)
	}
	return nil
}

// Check rejects options: pause takes none.
func (Pause) Check(step Step) error { return checkOptions(step, nil) }

// Inject pauses every target node.
func (Pause) Inject(ctx context.Context, env *Env, step Step) (Heal, any, error) {
	p := env.Cluster.(cluster.Pauser)
	nodes, err := ResolveNodes(step.Targets, env.Cluster.Nodes(), env.Rand)
	if err != nil {
		return nil, nil, err
	}
	desc := map[string]any{"nodes": nodes}
	var done []string
	out := env.takeDownWhile(Pause{}.Facts(), nodes, false, func() (failed []string) {
		done, failed, err = actOn(nodes, func(n string) error { return p.Pause(ctx, n) })
		return failed // not paused: never down
	})
	if len(done) == 0 {
		return nil, desc, err
	}
	heal := func(ctx context.Context) error {
		resumed, _, err := actOn(done, func(n string) error { return p.Resume(ctx, n) })
		out.bringUp(resumed)
		return err
	}
	return heal, desc, err
}
