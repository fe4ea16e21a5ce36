package nemesis

import (
	"context"
	"errors"
	"fmt"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// Restart kills target nodes (SIGKILL) and starts them again at once with
// their data dir, as a supervisor restarts a crashed process: a moment, which
// nothing heals. Whether the nodes keep their data depends on the cluster's
// persistence (scenario system.persistence), so a restart without
// persistence loses every lock the node held, with no downtime in which a
// lease could expire. The nodes are unavailable while they restart: taken
// down as they are killed (never, when the kill fails) and brought back once
// they have started again. A node that fails to start stays down, and the
// restart is recorded as in force in part with the error.
type Restart struct{}

// Facts returns the restart's facts, declared in faultkind.Restart.
func (Restart) Facts() Facts {
	return faultkind.Restart()
}

// Name returns the fault's name.
func (f Restart) Name() string { return f.Facts().Name }

// Available reports whether the cluster can kill and start nodes.
func (Restart) Available(env *Env) error { return Kill{}.Available(env) }

// Check rejects options: restart takes none.
func (Restart) Check(step Step) error { return checkOptions(step, nil) }

// Inject kills every target node and starts it again.
func (Restart) Inject(ctx context.Context, env *Env, step Step) (Heal, any, error) {
	k := env.Cluster.(cluster.Killer)
	nodes, err := ResolveNodes(step.Targets, env.Cluster.Nodes(), env.Rand)
	if err != nil {
		return nil, nil, err
	}
	desc := map[string]any{"nodes": nodes}
	var done []string
	out := env.takeDownWhile(Restart{}.Facts(), nodes, false, func() (failed []string) {
		done, failed, err = actOn(nodes, func(n string) error { return k.Kill(ctx, n) })
		return failed // not killed: never down
	})
	if len(done) == 0 {
		return nil, desc, err
	}
	// Killed nodes are started even when ctx ends: none may stay killed.
	started, _, startErr := actOn(done, func(n string) error { return k.Start(context.WithoutCancel(ctx), n) })
	out.bringUp(started)
	if err := errors.Join(err, startErr); err != nil {
		return nil, desc, fmt.Errorf("%w: %w", ErrPartly, err)
	}
	return nil, desc, nil
}
