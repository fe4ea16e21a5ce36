package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

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

// clockSystems are the systems whose nodes' clocks can be skewed, as
// package cluster declares them.
var clockSystems = cluster.SkewableSystems()

// onClockSystems returns f, a fault that skews node clocks, acting on
// clockSystems only: package faultkind, which imports nothing of the
// cluster's, leaves its Systems to the nemesis.
func onClockSystems(f Facts) Facts {
	f.Systems = slices.Clone(clockSystems)
	return f
}

// clockAvailable reports whether the cluster can skew node clocks and its
// system is one of the clock fault f's (Facts.Systems).
func clockAvailable(env *Env, f Facts) error {
	if _, ok := env.Cluster.(cluster.ClockSkewer); !ok {
		return fmt.Errorf("%w: the cluster cannot skew node clocks", cluster.ErrUnavailable)
	}
	if sys := env.Cluster.System(); !slices.Contains(f.Systems, sys) {
		return fmt.Errorf("%w: %s cannot act on %s nodes (it acts on %s): their clock cannot be skewed", cluster.ErrUnavailable, f.Name, sys, strings.Join(f.Systems, ", "))
	}
	return nil
}

func checkClockStep(step Step, known ...string) error {
	if step.Offset == 0 {
		return fmt.Errorf("%w: %s needs a non-zero offset such as +30s", ErrOption, step.Fault)
	}
	return checkOptions(step, known, known...)
}

// setClocks sets offset on every node, all at once (on another host each
// is a command there), and returns the nodes it was set on, in order.
func setClocks(sk cluster.ClockSkewer, nodes []string, offset time.Duration) ([]string, error) {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = sk.SetClockOffset(n, offset) })
	}
	wg.Wait()
	var done []string
	for i, n := range nodes {
		if errs[i] == nil {
			done = append(done, n)
		}
	}
	return done, errors.Join(errs...)
}

func resetClocks(sk cluster.ClockSkewer, nodes []string) error {
	_, err := setClocks(sk, nodes, 0)
	return err
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
