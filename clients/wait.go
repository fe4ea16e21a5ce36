package clients

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/jepsen-lite/jepsen-lite/lockapi"
)

// Waiter (lockapi.Waiter) is a Locker that can wait for a held lock, the way its library or
// its seed waits, for up to wait: one blocking acquire, recorded as one op.
// It returns ErrNotAcquired when the lock was still held when the wait ended.
// Every algorithm implements it:
//   - zk-recipe waits for its predecessor's node to go (the recipe);
//   - etcd-mutex calls the library's own Mutex.Lock;
//   - redsync runs its own tries and delays (Mutex.LockContext) until the wait
//     ends;
//   - mysql-get-lock waits on the server (GET_LOCK with the wait);
//   - mysql-for-update waits on the server for the row lock, up to
//     innodb_lock_wait_timeout (the wait in whole seconds);
//   - the others retry after a random delay, as the Redis seed asks of a client
//     that failed to take a lock ("retry after a random delay in order to try
//     to desynchronize multiple clients").
type Waiter = lockapi.Waiter

// The bounds of the random delay between two tries of a waiting acquire.
const (
	MinRetryDelay = 10 * time.Millisecond
	MaxRetryDelay = 50 * time.Millisecond
)

var (
	_ Waiter = (*RedisSingle)(nil)
	_ Waiter = (*RedisFenced)(nil)
	_ Waiter = (*Redlock)(nil)
	_ Waiter = (*Redsync)(nil)
	_ Waiter = (*RedisZadd)(nil)
	_ Waiter = (*Postgres)(nil)
	_ Waiter = (*ZKRecipe)(nil)
	_ Waiter = (*EtcdMutex)(nil)
	_ Waiter = (*MySQLGetLock)(nil)
)

// retryAcquire calls acquire until it takes the lock or wait has passed,
// sleeping a random delay between MinRetryDelay and MaxRetryDelay after each
// definite failure (ErrNotAcquired: a refusal, or a failure before any step
// that can take the lock). An indeterminate outcome ends the wait at once.
func retryAcquire(ctx context.Context, key string, ttl, wait time.Duration, rng *rand.Rand, acquire func(context.Context, string, time.Duration) (Lease, error)) (Lease, error) {
	deadline := time.Now().Add(wait)
	for {
		l, err := acquire(ctx, key, ttl)
		if err == nil || !errors.Is(err, ErrNotAcquired) {
			return l, err
		}
		delay := MinRetryDelay + time.Duration(rng.Int64N(int64(MaxRetryDelay-MinRetryDelay)+1))
		if time.Now().Add(delay).After(deadline) {
			return l, fmt.Errorf("%w (waited %v)", err, wait)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return l, fmt.Errorf("%w (wait cut short: %v)", err, ctx.Err())
		}
	}
}

// AcquireWait retries SET NX after a random delay until it takes the lock or
// wait has passed.
func (r *RedisSingle) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return retryAcquire(ctx, key, ttl, wait, r.owners.rand, r.Acquire)
}

// AcquireWait retries the fenced script after a random delay until it takes
// the lock or wait has passed.
func (r *RedisFenced) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return retryAcquire(ctx, key, ttl, wait, r.owners.rand, r.Acquire)
}

// AcquireWait runs the algorithm again after a random delay until it takes
// the lock or wait has passed, as the Redlock documentation describes.
func (r *Redlock) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return retryAcquire(ctx, key, ttl, wait, r.owners.rand, r.Acquire)
}

// AcquireWait retries the ZADD after a random delay until it takes the lock
// or wait has passed.
func (r *RedisZadd) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return retryAcquire(ctx, key, ttl, wait, r.rand, r.Acquire)
}

// AcquireWait retries the flavor's acquire statement after a random delay
// until it takes the lock or wait has passed.
func (p *Postgres) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return retryAcquire(ctx, key, ttl, wait, p.owners.rand, p.Acquire)
}

// AcquireWait lets redsync try as it does by default, with its own delays
// between tries, until wait has passed (the tries are unbounded; the wait
// bounds them).
func (r *Redsync) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	if err := checkTTL("redsync", ttl); err != nil {
		return Lease{}, err
	}
	value := r.owners.next()
	m := r.mutex(key, ttl, redsync.WithTries(math.MaxInt32), redsync.WithGenValueFunc(func() (string, error) { return value, nil }))
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	if err := m.LockContext(wctx); err != nil {
		return Lease{}, r.classifyAcquire(key, err)
	}
	return Lease{Key: key, Owner: m.Value(), Until: m.Until().Add(-r.drift), Expires: redisExpiry(start, ttl)}, nil
}
