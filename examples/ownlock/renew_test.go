package ownlock

import (
	"context"
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

// dreamRenewer takes the lock with SET NX PX, but its renewal only moves
// its own deadline: it never tells Redis. Do not ship this either.
type dreamRenewer struct {
	rdb   *redis.Client
	owner string
}

var _ clients.Renewer = (*dreamRenewer)(nil)

func (l *dreamRenewer) Acquire(ctx context.Context, key string, ttl time.Duration) (clients.Lease, error) {
	start := time.Now()
	ok, err := l.rdb.SetNX(ctx, key, l.owner, ttl).Result()
	if err != nil {
		return clients.Lease{}, err // unknown outcome: recorded as info
	}
	if !ok {
		return clients.Lease{}, clients.ErrNotAcquired
	}
	return clients.Lease{Key: key, Owner: l.owner, Until: start.Add(ttl), Expires: start.Add(ttl)}, nil
}

func (l *dreamRenewer) Renew(ctx context.Context, lease clients.Lease, ttl time.Duration) (clients.Lease, error) {
	lease.Until = time.Now().Add(ttl) // the bug: Redis still expires the key at the first ttl
	return lease, nil
}

func (l *dreamRenewer) Release(ctx context.Context, lease clients.Lease) error {
	return l.rdb.Del(ctx, lease.Key).Err()
}

func (l *dreamRenewer) Close() error { return l.rdb.Close() }

// TestHarnessFindsDreamRenewer runs the catalog's renewing Redis scenario
// (holds three times the ttl, a watchdog renews every ttl/3) against the
// lock whose renewal does nothing, and requires the harness to prove that
// two workers held it at once.
func TestHarnessFindsDreamRenewer(t *testing.T) {
	sc, err := scenarios.Load("redis-single-renew", runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	factory := func(ctx context.Context, target clients.Target) (clients.Locker, error) {
		rdb := redis.NewClient(&redis.Options{Addr: target.Endpoints[0].Addr})
		return &dreamRenewer{rdb: rdb, owner: fmt.Sprintf("w%d-%d", target.Worker, target.Rand.Uint64())}, nil
	}
	res, err := runner.Run(context.Background(), sc, runner.WithLocker(factory), runner.WithStore(t.TempDir()), runner.WithTimeLimit(3*time.Second), runner.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range res.Results.Checkers {
		for _, a := range c.Anomalies {
			kinds = append(kinds, a.Kind)
		}
	}
	if res.Results.Verdict != checker.Invalid || !slices.Contains(kinds, checker.DoubleHold) {
		t.Fatalf("verdict %s with %v: the renewal that renews nothing was not caught", res.Results.Verdict, kinds)
	}
}
