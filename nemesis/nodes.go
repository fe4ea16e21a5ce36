package nemesis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

const nodeTargets = "targets: node names or one, minority, majority, all, primaries, replicas"

// Pause stops target nodes (SIGSTOP, docker pause) until healed; the heal
// resumes them. A paused server still accepts TCP connections; what clients
// send is answered after the resume. A paused node is unavailable: it is
// taken down as it is paused (never, when its pause fails) and brought back
// once it is resumed (a node whose resume fails stays down).
type Pause struct{}

// Name returns "pause".
func (Pause) Name() string { return "pause" }

// Describe says what the fault does and what it takes.
func (Pause) Describe() string {
	return "stop the nodes' processes (SIGSTOP) until the heal resumes them; " + nodeTargets + "; needs a cluster that can pause nodes"
}

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
	out := env.takeDownWhile(nodes, false, func() (failed []string) {
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

// actOn calls act for each node, and returns the nodes it succeeded on, those
// it failed on, and the joined errors.
func actOn(nodes []string, act func(node string) error) (done, failed []string, err error) {
	var errs []error
	for _, n := range nodes {
		if err := act(n); err != nil {
			errs = append(errs, err)
			failed = append(failed, n)
			continue
		}
		done = append(done, n)
	}
	return done, failed, errors.Join(errs...)
}

// Kill kills target nodes (SIGKILL) until healed; the heal starts them again
// with their data dir. Whether they keep their data depends on the cluster's
// persistence (scenario system.persistence). The option restart-after keeps
// a node down at least that long even when the heal comes earlier (antirez's
// delayed restart: at least a ttl). A killed node is unavailable: it is
// taken down as it is killed (never, when its kill fails) and brought back
// once it has started again (a node that fails to start stays down).
type Kill struct{}

// Name returns "kill".
func (Kill) Name() string { return "kill" }

// Describe says what the fault does and what it takes.
func (Kill) Describe() string {
	return "kill the nodes (SIGKILL) until the heal starts them again with their data dir (kept or lost per system.persistence); " +
		nodeTargets + "; option restart-after (stay down at least this long); needs a cluster that can kill nodes"
}

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
	out := env.takeDownWhile(nodes, false, func() (failed []string) {
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

// clockAvailable reports whether env's cluster can skew node clocks.
func clockAvailable(env *Env) error {
	if _, ok := env.Cluster.(cluster.ClockSkewer); !ok {
		return fmt.Errorf("%w: the cluster cannot skew node clocks", cluster.ErrUnavailable)
	}
	if env.Cluster.System() == cluster.Etcd {
		return fmt.Errorf("%w: etcd is a Go binary; its clock cannot be skewed", cluster.ErrUnavailable)
	}
	return nil
}

func checkClockStep(step Step, known ...string) error {
	if step.Offset == 0 {
		return fmt.Errorf("%w: %s needs a non-zero offset such as +30s", ErrOption, step.Fault)
	}
	return checkOptions(step, known, known...)
}

// setClocks sets offset on every node and returns the nodes it was set on.
func setClocks(sk cluster.ClockSkewer, nodes []string, offset time.Duration) ([]string, error) {
	var done []string
	var errs []error
	for _, n := range nodes {
		if err := sk.SetClockOffset(n, offset); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, n)
	}
	return done, errors.Join(errs...)
}

func resetClocks(sk cluster.ClockSkewer, nodes []string) error {
	_, err := setClocks(sk, nodes, 0)
	return err
}

// ClockBump jumps the wall clock of target nodes by the step's Offset; the
// heal (clock-reset) sets the offset back to zero. Nodes whose clock cannot
// be skewed (Go binaries such as etcd) make it fail with an error wrapping
// cluster.ErrUnavailable.
// A node with a skewed clock is still up and reachable: the fault makes no
// node unavailable (its leases may end early or late, which the checkers
// judge).
type ClockBump struct{}

// Name returns "clock-bump".
func (ClockBump) Name() string { return "clock-bump" }

// Describe says what the fault does and what it takes.
func (ClockBump) Describe() string {
	return "offset the nodes' wall clocks by offset (e.g. +30s) until the heal resets them; " + nodeTargets +
		"; not for etcd (a Go binary)"
}

// Available reports whether the cluster can skew clocks.
func (ClockBump) Available(env *Env) error { return clockAvailable(env) }

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

// DefaultStrobePeriod is the period of a clock-strobe without a period
// option.
const DefaultStrobePeriod = time.Second

// ClockStrobe flips the wall clock of target nodes between the true time and
// the step's Offset every period (option, default DefaultStrobePeriod),
// starting with the offset, until healed; the heal stops the strobe and
// resets the clocks. Like ClockBump, it makes no node unavailable.
type ClockStrobe struct{}

// Name returns "clock-strobe".
func (ClockStrobe) Name() string { return "clock-strobe" }

// Describe says what the fault does and what it takes.
func (ClockStrobe) Describe() string {
	return "flip the nodes' wall clocks between the true time and offset every period (option, default 1s) until the heal; " +
		nodeTargets + "; not for etcd (a Go binary)"
}

// Available reports whether the cluster can skew clocks.
func (ClockStrobe) Available(env *Env) error { return clockAvailable(env) }

// Check requires an offset and checks the period.
func (ClockStrobe) Check(step Step) error {
	if err := checkClockStep(step, "period"); err != nil {
		return err
	}
	if p, _ := durationOption(step, "period", DefaultStrobePeriod); p <= 0 {
		return fmt.Errorf("%w: clock-strobe period must be positive", ErrOption)
	}
	return nil
}

// Inject starts the strobe.
func (ClockStrobe) Inject(_ context.Context, env *Env, step Step) (Heal, any, error) {
	sk := env.Cluster.(cluster.ClockSkewer)
	period, err := durationOption(step, "period", DefaultStrobePeriod)
	if err != nil {
		return nil, nil, err
	}
	if step.Offset == 0 || period <= 0 {
		return nil, nil, fmt.Errorf("%w: clock-strobe needs an offset and a positive period", ErrOption)
	}
	nodes, err := ResolveNodes(step.Targets, env.Cluster.Nodes(), env.Rand)
	if err != nil {
		return nil, nil, err
	}
	desc := map[string]any{"nodes": nodes, "offset": signed(step.Offset), "period": period.String()}
	done, err := setClocks(sk, nodes, step.Offset)
	if len(done) == 0 {
		return nil, desc, err
	}
	if err != nil {
		return func(context.Context) error { return resetClocks(sk, done) }, desc, err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		skewed := true
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				skewed = !skewed
				off := time.Duration(0)
				if skewed {
					off = step.Offset
				}
				// A failed flip is repaired by the next one and by the heal.
				_, _ = setClocks(sk, done, off)
			}
		}
	}()
	var once sync.Once
	heal := func(context.Context) error {
		once.Do(func() { close(stop) })
		wg.Wait()
		return resetClocks(sk, done)
	}
	return heal, desc, nil
}

// sleepCtx sleeps for d or until ctx ends, and returns ctx's error then.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
