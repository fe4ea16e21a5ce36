// Command mylock runs a catalog scenario against a lock of its own, from a
// module of its own that depends on jepsen-lite (docs/own-lock.md).
//
//	mylock -store DIR -time-limit 2s SCENARIO
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// setNX is the lock under test: SET NX PX to take it, an owner-checked DEL
// to give it back.
type setNX struct {
	rdb   *redis.Client
	owner string
	n     int
}

var delIfOurs = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

func (l *setNX) Acquire(ctx context.Context, key string, ttl time.Duration) (clients.Lease, error) {
	start := time.Now()
	l.n++
	value := fmt.Sprintf("%s-%d", l.owner, l.n)
	ok, err := l.rdb.SetNX(ctx, key, value, ttl).Result()
	if err != nil {
		return clients.Lease{}, err // unknown outcome: recorded as info
	}
	if !ok {
		return clients.Lease{}, clients.ErrNotAcquired
	}
	return clients.Lease{Key: key, Owner: value, Until: start.Add(ttl), Expires: start.Add(ttl)}, nil
}

func (l *setNX) Release(ctx context.Context, lease clients.Lease) error {
	n, err := delIfOurs.Run(ctx, l.rdb, []string{lease.Key}, lease.Owner).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return clients.ErrNotHeld
	}
	return nil
}

func (l *setNX) Close() error { return l.rdb.Close() }

func main() {
	store := flag.String("store", "store", "the store directory")
	limit := flag.Duration("time-limit", 2*time.Second, "the run's duration")
	flag.Parse()
	sc, err := scenarios.Load(flag.Arg(0), runner.Names())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(254)
	}
	factory := func(ctx context.Context, t clients.Target) (clients.Locker, error) {
		rdb := redis.NewClient(&redis.Options{Addr: t.Endpoints[0].Addr})
		return &setNX{rdb: rdb, owner: fmt.Sprintf("w%d-%d", t.Worker, t.Rand.Uint64())}, nil
	}
	res, err := runner.Run(context.Background(), sc, runner.WithLockerNamed("set-nx", factory),
		runner.WithStore(*store), runner.WithTimeLimit(*limit), runner.WithSeed(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(254)
	}
	fmt.Printf("lock %s verdict %s failed-faults %d\n", res.Results.Lock, res.Results.Verdict, len(res.Results.FailedFaults))
}
