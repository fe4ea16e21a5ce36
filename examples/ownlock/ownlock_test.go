package ownlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// checkThenSet is a lock that is not atomic: GET, then SET if the key was
// free. Do not ship this.
type checkThenSet struct {
	rdb    *redis.Client
	worker int
	n      int
}

var _ clients.Locker = (*checkThenSet)(nil)

func (l *checkThenSet) Acquire(ctx context.Context, key string, ttl time.Duration) (clients.Lease, error) {
	start := time.Now()
	if err := l.rdb.Get(ctx, key).Err(); err == nil {
		return clients.Lease{}, clients.ErrNotAcquired // someone holds it
	} else if !errors.Is(err, redis.Nil) {
		return clients.Lease{}, err // unknown outcome: recorded as info
	}
	time.Sleep(time.Millisecond) // the window between check and set
	l.n++
	owner := fmt.Sprintf("w%d-%d", l.worker, l.n)
	if err := l.rdb.Set(ctx, key, owner, ttl).Err(); err != nil {
		return clients.Lease{}, err
	}
	return clients.Lease{Key: key, Owner: owner, Until: start.Add(ttl)}, nil
}

func (l *checkThenSet) Release(ctx context.Context, lease clients.Lease) error {
	return l.rdb.Del(ctx, lease.Key).Err()
}

func (l *checkThenSet) Close() error { return l.rdb.Close() }

// TestHarnessFindsCheckThenSet runs the catalog's Redis baseline (eight
// workers, no faults) against the broken lock and requires the harness to
// prove two workers held it at once.
func TestHarnessFindsCheckThenSet(t *testing.T) {
	sc, err := scenarios.Load("redis-single-baseline", runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	factory := func(ctx context.Context, target clients.Target) (clients.Locker, error) {
		// Endpoints are the worker's own proxies to the scenario's nodes.
		return &checkThenSet{rdb: redis.NewClient(&redis.Options{Addr: target.Endpoints[0].Addr}), worker: target.Worker}, nil
	}
	res, err := runner.Run(context.Background(), sc, runner.WithLocker(factory), runner.WithStore(t.TempDir()), runner.WithTimeLimit(3*time.Second), runner.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	if res.Results.Verdict != checker.Invalid {
		t.Fatalf("verdict %s: the broken lock was not caught", res.Results.Verdict)
	}
	var kinds []string
	for _, c := range res.Results.Checkers {
		for _, a := range c.Anomalies {
			kinds = append(kinds, a.Kind)
		}
	}
	if !slices.Contains(kinds, checker.DoubleHold) {
		t.Errorf("no double-hold among %v", kinds)
	}
	t.Logf("caught: %d anomalies, store %s", len(kinds), res.Dir)
}
