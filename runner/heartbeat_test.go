package runner_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/runner"
)

// heartbeatStats counts what the heartbeat locks of one run saw.
type heartbeatStats struct {
	holds      atomic.Int64 // leases released
	renewed    atomic.Int64 // of those, leases renewed at least once before their release
	endedEarly atomic.Int64 // of those, leases whose Acquire context had ended before their release
	beats      sync.WaitGroup
}

// heartbeatLock takes the lock with SET NX PX and keeps it with a
// heartbeat goroutine tied to the context Acquire was given, as many
// libraries do: every ttl/4 an owner-checked PEXPIRE, until the context
// ends.
type heartbeatLock struct {
	rdb   *redis.Client
	owner string
	n     int
	stats *heartbeatStats

	mu    sync.Mutex
	holds map[string]*heartbeat // by owner value
}

// heartbeat is the heartbeat of one lease.
type heartbeat struct {
	ctx      context.Context
	renewals atomic.Int64
}

var pexpireIfOurs = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
var delIfOurs = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

func (l *heartbeatLock) Acquire(ctx context.Context, key string, ttl time.Duration) (clients.Lease, error) {
	start := time.Now()
	l.n++
	value := fmt.Sprintf("%s-%d", l.owner, l.n)
	ok, err := l.rdb.SetNX(ctx, key, value, ttl).Result()
	if err != nil {
		return clients.Lease{}, err
	}
	if !ok {
		return clients.Lease{}, clients.ErrNotAcquired
	}
	hb := &heartbeat{ctx: ctx}
	l.mu.Lock()
	l.holds[value] = hb
	l.mu.Unlock()
	l.stats.beats.Add(1)
	go func() {
		defer l.stats.beats.Done()
		t := time.NewTicker(ttl / 4)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if n, err := pexpireIfOurs.Run(ctx, l.rdb, []string{key}, value, ttl.Milliseconds()).Int(); err == nil && n == 1 {
					hb.renewals.Add(1)
				}
			}
		}
	}()
	// The library keeps the lease alive: no client-side deadline (Until),
	// and the service may free it one ttl after the last renewal.
	return clients.Lease{Key: key, Owner: value, Expires: start.Add(ttl)}, nil
}

func (l *heartbeatLock) Release(ctx context.Context, lease clients.Lease) error {
	l.mu.Lock()
	hb := l.holds[lease.Owner]
	delete(l.holds, lease.Owner)
	l.mu.Unlock()
	if hb != nil {
		l.stats.holds.Add(1)
		if hb.ctx.Err() != nil {
			l.stats.endedEarly.Add(1)
		}
		if hb.renewals.Load() > 0 {
			l.stats.renewed.Add(1)
		}
	}
	n, err := delIfOurs.Run(ctx, l.rdb, []string{lease.Key}, lease.Owner).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return clients.ErrNotHeld
	}
	return nil
}

func (l *heartbeatLock) Close() error { return l.rdb.Close() }

// TestAcquireContextLivesForTheHold runs a lock whose heartbeat lives on the
// context given to Acquire, holding three times the ttl with no renewal by
// the harness. The context must live until the release: every hold is
// renewed by its heartbeat, no context ends before its release, every
// heartbeat stops once its hold is over, and the lock stays exclusive.
func TestAcquireContextLivesForTheHold(t *testing.T) {
	sc := load(t, "redis-single-renew")
	sc.Lock.Renew = 0 // the lock's own heartbeat keeps it
	stats := &heartbeatStats{}
	factory := func(ctx context.Context, target clients.Target) (clients.Locker, error) {
		rdb := redis.NewClient(&redis.Options{Addr: target.Endpoints[0].Addr})
		return &heartbeatLock{rdb: rdb, owner: fmt.Sprintf("w%d-%d", target.Worker, target.Rand.Uint64()), stats: stats, holds: map[string]*heartbeat{}}, nil
	}
	res, err := runner.Run(context.Background(), sc, runner.WithLocker(factory), runner.WithStore(t.TempDir()),
		runner.WithTimeLimit(3*time.Second), runner.WithSeed(1))
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { stats.beats.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("heartbeats still running 30s after the run: their Acquire contexts never ended")
	}
	holds, renewed, early := stats.holds.Load(), stats.renewed.Load(), stats.endedEarly.Load()
	t.Logf("%d holds, %d renewed by their heartbeat, %d whose context ended before the release; verdict %s", holds, renewed, early, res.Results.Verdict)
	if holds == 0 {
		t.Fatal("no lease was ever released")
	}
	if early > 0 {
		t.Errorf("%d of %d Acquire contexts ended before their hold did", early, holds)
	}
	if renewed != holds {
		t.Errorf("%d of %d holds were renewed by their heartbeat", renewed, holds)
	}
	if res.Results.Verdict != checker.Valid {
		t.Errorf("verdict %s, want valid: the heartbeat did not keep the lock", res.Results.Verdict)
	}
}
