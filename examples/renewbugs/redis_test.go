package renewbugs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jepsen-lite/jepsen-lite/clients"
)

// renewScript moves the key's expiry to the instant ARGV[2] (ms since the
// epoch) when the key is still the owner's ARGV[1]; it returns 0 when not.
var renewScript = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpireat', KEYS[1], ARGV[2]) end return 0`)

// releaseScript deletes the key when it is still the owner's ARGV[1]; it
// returns 0 when not.
var releaseScript = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

// redisLock is what the three locks share: one Redis, the worker's owner
// value, SET NX to take the key, and the owner-checked renewal and release.
type redisLock struct {
	rdb   *redis.Client
	owner string
}

// newRedisLock is a redisLock on the target's first endpoint.
func newRedisLock(target clients.Target) redisLock {
	return redisLock{
		rdb:   redis.NewClient(&redis.Options{Addr: target.Endpoints[0].Addr, MaxRetries: -1}),
		owner: fmt.Sprintf("w%d-%d", target.Worker, target.Rand.Uint64()),
	}
}

// take sets key to the owner with args (its expiry) if it is free; an
// error is an outcome unknown.
func (l redisLock) take(ctx context.Context, key string, args ...any) error {
	err := l.rdb.Do(ctx, append([]any{"set", key, l.owner, "nx"}, args...)...).Err()
	if errors.Is(err, redis.Nil) {
		return clients.ErrNotAcquired
	}
	return err
}

// extend moves the key's expiry to at when the key is still the owner's;
// false when it no longer is.
func (l redisLock) extend(ctx context.Context, key string, at time.Time) (bool, error) {
	n, err := renewScript.Run(ctx, l.rdb, []string{key}, l.owner, at.UnixMilli()).Int()
	return n == 1, err
}

// release deletes the key when it is still the owner's (ErrNotHeld when
// not).
func (l redisLock) release(ctx context.Context, key string) error {
	n, err := releaseScript.Run(ctx, l.rdb, []string{key}, l.owner).Int()
	switch {
	case err != nil:
		return err
	case n == 0:
		return clients.ErrNotHeld
	}
	return nil
}
