package clients

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisTimeout is the per-command timeout of redis-single,
// redis-fenced and the ZADD locks (option "timeout").
const DefaultRedisTimeout = 500 * time.Millisecond

// compareAndDelete deletes KEYS[1] only while it still holds ARGV[1]: the
// seed's release script.
var compareAndDelete = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("del", KEYS[1])
else
    return 0
end`)

// extendIfOwner sets a new expiry of ARGV[2] ms on KEYS[1] only while it still
// holds ARGV[1]: the owner-checked extension of the Redis seed and of redsync.
var extendIfOwner = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
    return redis.call("pexpire", KEYS[1], ARGV[2])
else
    return 0
end`)

// newRedisClient returns a client for one node. It never retries a command
// on its own (a retried SET NX could find its own key and report the lock as
// taken) nor a failed dial (the dial error must reach the caller, as proof the
// command was not sent), every command is bounded by timeout, and its
// connections are dialed with tcp's timeouts.
func newRedisClient(addr string, timeout time.Duration, tcp TCP) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                  addr,
		Dialer:                redisDialer(tcp, timeout),
		MaxRetries:            -1,
		DialerRetries:         1,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		ContextTimeoutEnabled: true,
		PoolSize:              2,
		DisableIdentity:       true,
	})
}

// RedisSingle is the single-instance Redis lock: SET key value NX PX ttl on
// the primary (on a Redis Cluster, the master of the key's slot, found by
// following MOVED: redisRoutes), released by a Lua compare-and-delete. Its lease is valid until
// the acquire's start plus ttl minus the target's drift; it has no token.
// Options: "timeout" (per command, default DefaultRedisTimeout).
type RedisSingle struct {
	afterResponse
	name    string
	routes  *redisRoutes
	timeout time.Duration
	drift   time.Duration
	owners  ownerValues
}

var (
	_ Locker         = (*RedisSingle)(nil)
	_ Renewer        = (*RedisSingle)(nil)
	_ ResponseHooker = (*RedisSingle)(nil)
)

// NewRedisSingle is the redis-single Factory.
func NewRedisSingle(ctx context.Context, t Target) (Locker, error) {
	return newRedisSingle("redis-single", t)
}

func newRedisSingle(name string, t Target) (*RedisSingle, error) {
	ep, timeout, err := redisPrimaryTarget(name, t)
	if err != nil {
		return nil, err
	}
	owners, err := newOwnerValues(name, t)
	if err != nil {
		return nil, err
	}
	return &RedisSingle{
		name:    name,
		routes:  newRedisRoutes(ep, t.Endpoints, t.Process, timeout, t.TCP),
		timeout: timeout,
		drift:   t.Drift,
		owners:  owners,
	}, nil
}

// Acquire sends SET key value NX PX ttl once. A nil reply (the key exists)
// is ErrNotAcquired. Its one step (redisSingleSteps) can take the lock: a
// failure is indeterminate, unless the SET was never sent because its
// connection could not be opened (ErrNotAcquired).
func (r *RedisSingle) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if err := checkTTL(r.name, ttl); err != nil {
		return Lease{}, err
	}
	value := r.owners.next()
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var ok bool
	err := r.routes.do(key, func(c *redis.Client) (err error) {
		ok, err = c.SetNX(cctx, key, value, ttl).Result()
		return err
	})
	if err != nil {
		return Lease{}, fmt.Errorf("clients: %s: %s: %w", r.name, key, redisStepError("set", err))
	}
	r.runAfterResponse()
	if !ok {
		return Lease{}, fmt.Errorf("clients: %s: %s is held: %w", r.name, key, ErrNotAcquired)
	}
	return Lease{Key: key, Owner: value, Until: validUntil(start, ttl, r.drift), Expires: redisExpiry(start, ttl)}, nil
}

// Release deletes the key if it still holds the lease's value; ErrNotHeld when
// it did not.
func (r *RedisSingle) Release(ctx context.Context, l Lease) error {
	return r.routes.do(l.Key, func(c *redis.Client) error { return releaseRedisKey(ctx, r.name, c, r.timeout, l) })
}

// Renew extends the lease to ttl from now, only while the key still holds
// the lease's value (ErrNotHeld when it does not). The token is unchanged.
func (r *RedisSingle) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if err := checkTTL(r.name, ttl); err != nil {
		return Lease{}, err
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var n int64
	err := r.routes.do(l.Key, func(c *redis.Client) (err error) {
		n, err = extendIfOwner.Run(cctx, c, []string{l.Key}, l.Owner, ttl.Milliseconds()).Int64()
		return err
	})
	if err != nil {
		return Lease{}, fmt.Errorf("clients: %s: renew %s: %w", r.name, l.Key, err)
	}
	if n == 0 {
		return Lease{}, fmt.Errorf("clients: %s: renew %s: %w", r.name, l.Key, ErrNotHeld)
	}
	l.Until, l.Expires = validUntil(start, ttl, r.drift), redisExpiry(start, ttl)
	return l, nil
}

// Close closes the connections.
func (r *RedisSingle) Close() error {
	if err := r.routes.close(); err != nil {
		return fmt.Errorf("clients: %s: close: %w", r.name, err)
	}
	return nil
}

func releaseRedisKey(ctx context.Context, name string, c *redis.Client, timeout time.Duration, l Lease) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n, err := compareAndDelete.Run(cctx, c, []string{l.Key}, l.Owner).Int64()
	if err != nil {
		return fmt.Errorf("clients: %s: release %s: %w", name, l.Key, err)
	}
	if n == 0 {
		return fmt.Errorf("clients: %s: release %s: %w", name, l.Key, ErrNotHeld)
	}
	return nil
}

// redisExpiry is the earliest instant a Redis key set with PX ttl by a
// command sent after start can expire: the server keeps whole milliseconds.
func redisExpiry(start time.Time, ttl time.Duration) time.Time {
	return start.Add(ttl.Truncate(time.Millisecond))
}

// checkTTL rejects a ttl that a millisecond-resolution server cannot store.
func checkTTL(name string, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("clients: %s: ttl %v is below 1ms", name, ttl)
	}
	return nil
}

// redisSilentLogger drops go-redis's own log lines.
type redisSilentLogger struct{}

func (redisSilentLogger) Printf(context.Context, string, ...any) {}

// SilenceRedisLogs stops go-redis from printing its own log lines (such as
// "connection pool: failed to dial") to stderr, where they would interleave
// with the harness's output while the nemesis cuts links. go-redis has one
// process-wide logger, so this affects every go-redis client in the process;
// the errors themselves still reach the callers. The ZooKeeper and etcd
// clients are silenced per Locker already.
func SilenceRedisLogs() { redis.SetLogger(redisSilentLogger{}) }
