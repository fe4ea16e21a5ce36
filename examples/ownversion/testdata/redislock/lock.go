// Package redislock is a user's module that tests its own Redis lock, on
// the go-redis version it pins, under jepsen-lite through lockapi: its
// go.mod requires lockapi, not the harness, so that no version of the
// harness's raises its own.
package redislock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jepsen-lite/jepsen-lite/lockapi"
	"github.com/redis/go-redis/v9"
)

// releaseScript deletes the key only while it holds the caller's owner.
var releaseScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// SetNX is a single-instance Redis lock: SET NX PX with an owner of its
// own, released by a script that deletes the key only while it holds the
// owner.
type SetNX struct {
	rdb    *redis.Client
	rand   *rand.Rand
	worker int
}

var _ lockapi.Locker = (*SetNX)(nil)

// NewSetNX dials the worker's own link to the primary.
func NewSetNX(_ context.Context, t lockapi.Target) (lockapi.Locker, error) {
	return &SetNX{rdb: client(t), rand: t.Rand, worker: t.Worker}, nil
}

// client is a go-redis client on the worker's own link to the first node,
// which retries nothing: a retried SET could take the lock twice.
func client(t lockapi.Target) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: t.Endpoints[0].Addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
}

// Acquire sets key to a new owner if it is free.
func (l *SetNX) Acquire(ctx context.Context, key string, ttl time.Duration) (lockapi.Lease, error) {
	start := time.Now()
	owner := fmt.Sprintf("w%d-%016x", l.worker, l.rand.Uint64())
	ok, err := l.rdb.SetNX(ctx, key, owner, ttl).Result()
	if err != nil {
		return lockapi.Lease{}, err // unknown outcome
	}
	if !ok {
		return lockapi.Lease{}, lockapi.ErrNotAcquired
	}
	return lockapi.Lease{Key: key, Owner: owner, Until: start.Add(ttl), Expires: start.Add(ttl)}, nil
}

// Release deletes key while it holds the lease's owner.
func (l *SetNX) Release(ctx context.Context, lease lockapi.Lease) error {
	n, err := releaseScript.Run(ctx, l.rdb, []string{lease.Key}, lease.Owner).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return lockapi.ErrNotHeld
	}
	return nil
}

// Close closes the client.
func (l *SetNX) Close() error { return l.rdb.Close() }

// CheckThenSet is a lock that is not atomic: GET, then SET if the key was
// free, so two workers can both see the key free and both take it. Do not
// ship this.
type CheckThenSet struct{ SetNX }

// NewCheckThenSet dials the worker's own link to the primary.
func NewCheckThenSet(_ context.Context, t lockapi.Target) (lockapi.Locker, error) {
	return &CheckThenSet{SetNX{rdb: client(t), rand: t.Rand, worker: t.Worker}}, nil
}

// Acquire reads key and sets it when it was free.
func (l *CheckThenSet) Acquire(ctx context.Context, key string, ttl time.Duration) (lockapi.Lease, error) {
	start := time.Now()
	if err := l.rdb.Get(ctx, key).Err(); err == nil {
		return lockapi.Lease{}, lockapi.ErrNotAcquired
	} else if !errors.Is(err, redis.Nil) {
		return lockapi.Lease{}, err
	}
	time.Sleep(time.Millisecond) // the window between check and set
	owner := fmt.Sprintf("w%d-%016x", l.worker, l.rand.Uint64())
	if err := l.rdb.Set(ctx, key, owner, ttl).Err(); err != nil {
		return lockapi.Lease{}, err
	}
	return lockapi.Lease{Key: key, Owner: owner, Until: start.Add(ttl), Expires: start.Add(ttl)}, nil
}

// Locks are the locks this module serves to the harness.
var Locks = []lockapi.Lock{
	{Name: "setnx", Factory: NewSetNX, Client: "setnx (go-redis " + redis.Version() + ")", System: "redis"},
	{Name: "check-then-set", Factory: NewCheckThenSet, Client: "check-then-set (go-redis " + redis.Version() + ")", System: "redis"},
}
