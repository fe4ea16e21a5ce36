package nemesis

import (
	"context"
	"fmt"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// Kill kills target nodes (SIGKILL) until healed; the heal starts them again
// with their data dir. Whether they keep their data depends on the cluster's
// persistence (scenario system.persistence). The option restart-after keeps
// a node down at least that long even when the heal comes earlier (antirez's
// delayed restart: at least a ttl). A killed node is unavailable: it is
// taken down as it is killed (never, when its kill fails) and brought back
// once it has started again (a node that fails to start stays down).
type Kill struct{}

// Facts returns the kill's facts, declared in faultkind.Kill.
func (Kill) Facts() Facts {
	return faultkind.Kill()
}

// Name returns the fault's name.
func (f Kill) Name() string { return f.Facts().Name }

// Available reports whether the cluster can kill and start nodes.
func (Kill) Available(env *Env) error {
	if _, ok := env.Cluster.(cluster.Killer); !ok {
		return fmt.Errorf("%w: the cluster cannot kill nodes", cluster.ErrUnavailable)
	}
	return nil
}

// Check checks the restart-after option.
func (Kill) Check(step Step) error {
	return checkOptions(step, []string{"restart-after"}, "restart-after")
}

// Inject kills every target node.
func (Kill) Inject(ctx context.Context, env *Env, step Step) (Heal, any, error) {
	k := env.Cluster.(cluster.Killer)
	restartAfter, err := durationOption(step, "restart-after", 0)
	if err != nil {
		return nil, nil, err
	}
	nodes, err := ResolveNodes(step.Targets, env.Cluster.Nodes(), env.Rand)
	if err != nil {
		return nil, nil, err
	}
	desc := map[string]any{"nodes": nodes}
	if restartAfter > 0 {
		desc["restart-after"] = restartAfter.String()
	}
	var done []string
	out := env.takeDownWhile(Kill{}.Facts(), nodes, false, func() (failed []string) {
		done, failed, err = actOn(nodes, func(n string) error { return k.Kill(ctx, n) })
		return failed // not killed: never down
	})
	if len(done) == 0 {
		return nil, desc, err
	}
	killed := time.Now()
	heal := func(ctx context.Context) error {
		// The nodes are started even when ctx ends during the wait: no node
		// may stay killed after the run.
		_ = sleepCtx(ctx, time.Until(killed.Add(restartAfter)))
		ctx = context.WithoutCancel(ctx)
		started, _, err := actOn(done, func(n string) error { return k.Start(ctx, n) })
		out.bringUp(started)
		return err
	}
	return heal, desc, err
}
