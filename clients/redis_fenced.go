package clients

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// fencedAcquire sets KEYS[1] to ARGV[1] with NX PX ARGV[2] and, only if it was
// set, increments KEYS[2] and returns the new value as the fencing token; 0
// when the lock is held.
var fencedAcquire = redis.NewScript(`
if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
    return redis.call("incr", KEYS[2])
else
    return 0
end`)

// RedisFenced is the fenced Redis lock in the style of Redisson's FencedLock:
// one Lua script takes the key with SET NX PX and, if it was set, INCRs
// the key's counter (fenceKey) and returns it as the fencing token. Release is the
// compare-and-delete of redis-single; Until is the acquire's start plus ttl
// minus drift. It runs on the first primary endpoint, so the same client
// serves independent masters and the primary-replica topology. Options:
// "timeout" (per command, default DefaultRedisTimeout).
type RedisFenced struct {
	*RedisSingle
}

var (
	_ Locker         = (*RedisFenced)(nil)
	_ Renewer        = (*RedisFenced)(nil)
	_ ResponseHooker = (*RedisFenced)(nil)
)

// NewRedisFenced is the redis-fenced Factory.
func NewRedisFenced(ctx context.Context, t Target) (Locker, error) {
	s, err := newRedisSingle("redis-fenced", t)
	if err != nil {
		return nil, err
	}
	return &RedisFenced{RedisSingle: s}, nil
}

// fenceKey returns the key of the fencing counter of the lock key: in the
// key's hash slot, as a script's keys must be on a Redis Cluster, by
// Redisson's rule for its FencedLock's token: "{<key>}:fence", or
// "<key>:fence" when the key holds a "{" (its own hash tag).
func fenceKey(key string) string {
	if strings.Contains(key, "{") {
		return key + ":fence"
	}
	return "{" + key + "}:fence"
}

// Acquire runs the fenced script once; a 0 reply is ErrNotAcquired. Its one
// step (redisFencedSteps) can take the lock: a failure is indeterminate,
// unless the script was never sent because its connection could not be
// opened (ErrNotAcquired).
func (r *RedisFenced) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if err := checkTTL(r.name, ttl); err != nil {
		return Lease{}, err
	}
	value := r.owners.next()
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var token int64
	err := r.routes.do(key, func(c *redis.Client) (err error) {
		token, err = fencedAcquire.Run(cctx, c, []string{key, fenceKey(key)}, value, ttl.Milliseconds()).Int64()
		return err
	})
	if err != nil {
		return Lease{}, fmt.Errorf("clients: %s: %s: %w", r.name, key, redisStepError("acquire", err))
	}
	r.runAfterResponse()
	if token <= 0 {
		return Lease{}, fmt.Errorf("clients: %s: %s is held: %w", r.name, key, ErrNotAcquired)
	}
	return Lease{Key: key, Owner: value, Token: uint64(token), Until: validUntil(start, ttl, r.drift), Expires: redisExpiry(start, ttl)}, nil
}
