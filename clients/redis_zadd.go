package clients

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

// The sorted sets the ZADD locks keep their keys in, as members.
const (
	zaddMutexSet   = "task:mutex"
	zaddTimeoutSet = "task:timeout"
	zaddStateSet   = "task:state"
)

// The scores of the ZADD mutex and state-transition locks.
const (
	zaddReleased = 0 // mutex: released; state: done
	zaddAcquired = 1 // mutex: acquired; state: in_progress
)

// zaddFlavor selects one of the three ZADD locks of the NoSQL seed.
type zaddFlavor int

const (
	zaddMutex zaddFlavor = iota
	zaddTimeout
	zaddState
)

func (f zaddFlavor) String() string {
	switch f {
	case zaddMutex:
		return "redis-zadd-mutex"
	case zaddTimeout:
		return "redis-zadd-timeout"
	default:
		return "redis-zadd-state"
	}
}

// RedisZadd is one of the NoSQL seed's three ZADD locks, exactly as written
// there, weaknesses included. The lock's key is a member of a sorted set.
//
// redis-zadd-mutex: the member is created released with ZADD task:mutex NX 0
// key; acquire is ZADD task:mutex XX CH 1 key (1 changed = acquired, 0 =
// ErrNotAcquired); release is ZADD task:mutex XX CH 0 key (0 changed =
// ErrNotHeld). No expiry (a holder that dies holds forever), no owner check
// (anyone can release), no token, no Until.
//
// redis-zadd-timeout: score = floor(ts/timeout) with ts the worker's own clock
// (Target.Clock) in milliseconds and timeout the ttl; acquire is ZADD
// task:timeout GT CH score key (1 = acquired). The lock is the time slot: it
// is held until the slot ends, so Lease.Expires = the acquire's start + the
// time left in the slot on the worker's clock, Until = Expires − drift, and
// the score is the token (GT makes it strictly increase per key). Release
// does nothing, as in the seed (ErrReleaseNoOp): the lock frees itself when
// the next slot begins. A skewed worker clock takes a later slot early.
//
// redis-zadd-state: states done (0, initial), in_progress (1), failed (2); the
// member is created done with ZADD task:state NX 0 key; capture is ZADD
// task:state XX CH 1 key; release is SetStatus(done), an unconditional ZADD
// task:state XX 0 key that never reports ErrNotHeld. No expiry, no owner, no
// token, no Until.
//
// Options: "timeout" (per command, default DefaultRedisTimeout).
type RedisZadd struct {
	afterResponse
	stepHook
	flavor  zaddFlavor
	client  *redis.Client
	timeout time.Duration
	drift   time.Duration
	clock   Clock
	rand    *rand.Rand // the worker's own source: the delays of a waiting acquire
}

var (
	_ Locker         = (*RedisZadd)(nil)
	_ ResponseHooker = (*RedisZadd)(nil)
)

// NewRedisZaddMutex is the redis-zadd-mutex Factory.
func NewRedisZaddMutex(ctx context.Context, t Target) (Locker, error) {
	return newRedisZadd(zaddMutex, t)
}

// NewRedisZaddTimeout is the redis-zadd-timeout Factory. It needs t.Clock.
func NewRedisZaddTimeout(ctx context.Context, t Target) (Locker, error) {
	return newRedisZadd(zaddTimeout, t)
}

// NewRedisZaddState is the redis-zadd-state Factory.
func NewRedisZaddState(ctx context.Context, t Target) (Locker, error) {
	return newRedisZadd(zaddState, t)
}

func newRedisZadd(f zaddFlavor, t Target) (*RedisZadd, error) {
	name := f.String()
	ep, timeout, err := redisPrimaryTarget(name, t)
	if err != nil {
		return nil, err
	}
	if f == zaddTimeout && t.Clock == nil {
		return nil, fmt.Errorf("clients: %s: target has no clock", name)
	}
	if t.Rand == nil {
		return nil, fmt.Errorf("clients: %s: target has no random source", name)
	}
	return &RedisZadd{
		flavor:  f,
		client:  newRedisClient(ep.Addr, timeout, t.TCP),
		timeout: timeout,
		drift:   t.Drift,
		clock:   t.Clock,
		rand:    t.Rand,
	}, nil
}

func (r *RedisZadd) zadd(ctx context.Context, set string, args redis.ZAddArgs) (int64, error) {
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.client.ZAddArgs(cctx, set, args).Result()
}

// Acquire takes the lock once.
//
// The mutex and the state lock send two steps (zaddSteps). The create step,
// ZADD NX 0, cannot take the lock: NX only adds a member that is absent,
// and adds it released (mutex) or done (state); it never changes a member
// that exists, so it can neither take nor free a lock, whenever it reaches
// the server. A failure there, a network error included, is ErrNotAcquired
// (recorded fail), and the client goes on. A member it may have created
// behind a lost reply is a released lock, not an orphan: the next acquire's
// ZADD XX CH 1 takes it. The acquire step, ZADD XX CH 1, takes the lock
// when it changes the score: a failure there is indeterminate, unless the
// command was never sent because its connection could not be opened.
// The timeout lock has only its one ZADD GT CH, which can take the lock.
func (r *RedisZadd) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	name := r.flavor.String()
	if r.flavor == zaddTimeout {
		return r.acquireTimeout(ctx, key, ttl)
	}
	set := zaddMutexSet
	if r.flavor == zaddState {
		set = zaddStateSet
	}
	r.step("create")
	if _, err := r.zadd(ctx, set, redis.ZAddArgs{NX: true, Members: []redis.Z{{Score: zaddReleased, Member: key}}}); err != nil {
		return Lease{}, fmt.Errorf("clients: %s: %s: %w", name, key, beforeGrant("create", err))
	}
	r.step("acquire")
	n, err := r.zadd(ctx, set, redis.ZAddArgs{XX: true, Ch: true, Members: []redis.Z{{Score: zaddAcquired, Member: key}}})
	if err != nil {
		return Lease{}, fmt.Errorf("clients: %s: %s: %w", name, key, redisStepError("acquire", err))
	}
	r.runAfterResponse()
	if n == 0 {
		return Lease{}, fmt.Errorf("clients: %s: %s is held: %w", name, key, ErrNotAcquired)
	}
	return Lease{Key: key, Never: true}, nil
}

// zaddSlot returns the seed's score floor(ts/timeout), with ts the worker
// clock's milliseconds, and the time from now to the end of that slot, when
// a contender reading the same clock takes the next slot.
func zaddSlot(now time.Time, ttl time.Duration) (score int64, left time.Duration) {
	ts := now.UnixMilli()
	timeout := ttl.Milliseconds()
	score = ts / timeout
	if ts < 0 && ts%timeout != 0 {
		score-- // floor, not truncation, for clocks before 1970
	}
	end := time.UnixMilli((score + 1) * timeout)
	return score, end.Sub(now)
}

func (r *RedisZadd) acquireTimeout(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	name := r.flavor.String()
	if err := checkTTL(name, ttl); err != nil {
		return Lease{}, err
	}
	start := time.Now() // no later than the clock reading below
	score, left := zaddSlot(r.clock.Now(), ttl)
	r.step("acquire")
	n, err := r.zadd(ctx, zaddTimeoutSet, redis.ZAddArgs{GT: true, Ch: true, Members: []redis.Z{{Score: float64(score), Member: key}}})
	if err != nil {
		return Lease{}, fmt.Errorf("clients: %s: %s: %w", name, key, redisStepError("acquire", err))
	}
	r.runAfterResponse()
	if n == 0 {
		return Lease{}, fmt.Errorf("clients: %s: %s is held in slot %d: %w", name, key, score, ErrNotAcquired)
	}
	if score < 0 {
		return Lease{}, fmt.Errorf("clients: %s: worker clock before 1970 gave slot %d", name, score)
	}
	return Lease{Key: key, Token: uint64(score), Until: validUntil(start, left, r.drift), Expires: start.Add(left)}, nil
}

// Release gives the lock back as the seed does: the mutex clears the flag
// (ErrNotHeld when it was already clear), the state lock sets done
// unconditionally, the timeout lock does nothing.
func (r *RedisZadd) Release(ctx context.Context, l Lease) error {
	name := r.flavor.String()
	switch r.flavor {
	case zaddTimeout:
		return fmt.Errorf("clients: %s: release %s: %w", name, l.Key, ErrReleaseNoOp)
	case zaddState:
		if _, err := r.zadd(ctx, zaddStateSet, redis.ZAddArgs{XX: true, Members: []redis.Z{{Score: zaddReleased, Member: l.Key}}}); err != nil {
			return fmt.Errorf("clients: %s: release %s: %w", name, l.Key, err)
		}
		return nil
	}
	n, err := r.zadd(ctx, zaddMutexSet, redis.ZAddArgs{XX: true, Ch: true, Members: []redis.Z{{Score: zaddReleased, Member: l.Key}}})
	if err != nil {
		return fmt.Errorf("clients: %s: release %s: %w", name, l.Key, err)
	}
	if n == 0 {
		return fmt.Errorf("clients: %s: release %s: %w", name, l.Key, ErrNotHeld)
	}
	return nil
}

// Close closes the connection.
func (r *RedisZadd) Close() error {
	if err := r.client.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("clients: %s: close: %w", r.flavor, err)
	}
	return nil
}
