package renewbugs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
)

// watchdogLock takes the key with SET NX PX ttl and renews it in the
// background, as a lock that renews by itself: its leases have no Until,
// and expire, should the renewals stop, a ttl after the acquire's invoke.
// Its watchdog renews every Every of the ttl, each renewal moving the
// key's expiry to a ttl after the renewal was sent and the next renewal
// an interval after that. Slip and FromReturn plant the bugs: with Slip
// the watchdog sleeps an interval after each reply and moves the expiry
// to the previous expiry plus an interval, so each reply's delay is lost
// and under latency it renews later and later until the key expires
// under its holder; with FromReturn its first renewal is an interval
// after the acquire returned instead of after its invoke, late by the
// acquire's reply. Its first Acquire loads the renewal script into the
// server's cache before it takes the key, so that each renewal is one
// command (EVALSHA), applied when it arrives, not an EVALSHA refused with
// NOSCRIPT and an EVAL sent a reply's delay later.
type watchdogLock struct {
	redisLock
	every            float64
	slip, fromReturn bool
	loaded           bool // the renewal script is in the server's cache

	mu   sync.Mutex
	stop context.CancelFunc
	done chan struct{}
}

var _ clients.Locker = (*watchdogLock)(nil)

// Acquire takes the lock and starts its watchdog, which lives until
// Release or the end of ctx (the hold's).
func (l *watchdogLock) Acquire(ctx context.Context, key string, ttl time.Duration) (clients.Lease, error) {
	if !l.loaded {
		if err := renewScript.Load(ctx, l.rdb).Err(); err != nil {
			return clients.Lease{}, fmt.Errorf("%w: loading the renewal script: %v", clients.ErrNotAcquired, err)
		}
		l.loaded = true
	}
	start := time.Now()
	if err := l.take(ctx, key, "px", ttl.Milliseconds()); err != nil {
		return clients.Lease{}, err
	}
	from := start
	if l.fromReturn {
		from = time.Now() // the bug: the reply's delay is not the lease's
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	l.mu.Lock()
	l.stop, l.done = stop, done
	l.mu.Unlock()
	interval := time.Duration(float64(ttl) * l.every)
	go func() {
		defer close(done)
		if l.slip {
			l.slipping(wctx, key, start.Add(ttl), interval)
			return
		}
		l.watch(wctx, key, from, ttl, interval)
	}()
	return clients.Lease{Key: key, Owner: l.owner, Expires: start.Add(ttl)}, nil
}

// watch renews key an interval after from, then an interval after each
// renewal was sent, each to a ttl after it was sent, until ctx ends or
// the key is no longer the owner's.
func (l *watchdogLock) watch(ctx context.Context, key string, from time.Time, ttl, interval time.Duration) {
	for {
		if !sleepUntil(ctx, from.Add(interval)) {
			return
		}
		from = time.Now()
		if held, err := l.extend(ctx, key, from.Add(ttl)); err == nil && !held || ctx.Err() != nil {
			return
		}
	}
}

// slipping is the planted bug's watchdog: it sleeps an interval after each
// reply, and moves the expiry from the previous one by an interval, so
// that the renewals fall behind the expiry by every reply's delay.
func (l *watchdogLock) slipping(ctx context.Context, key string, expiry time.Time, interval time.Duration) {
	for {
		if !sleepUntil(ctx, time.Now().Add(interval)) {
			return
		}
		expiry = expiry.Add(interval)
		if held, err := l.extend(ctx, key, expiry); err == nil && !held || ctx.Err() != nil {
			return
		}
	}
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Release stops the watchdog, waits for it, and deletes the key when it is
// still the owner's.
func (l *watchdogLock) Release(ctx context.Context, lease clients.Lease) error {
	l.mu.Lock()
	stop, done := l.stop, l.done
	l.stop, l.done = nil, nil
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	return l.release(ctx, lease.Key)
}

func (l *watchdogLock) Close() error { return l.rdb.Close() }

// secondsLock takes the key with SET NX EX, its ttl in whole seconds, and
// claims the ttl it was asked for: until and expiry a ttl after the
// acquire's invoke. With Truncate it plants the bug: the seconds are
// rounded down with no floor, so a 1.5 s lease lives 1 s in Redis and a
// 600 ms one is refused (EX 0); its twin rounds up, to at least 1 s, a
// key that lives at least as long as the lease it claims.
type secondsLock struct {
	redisLock
	truncate bool
}

var _ clients.Locker = (*secondsLock)(nil)

// Acquire takes the lock for ttl, in whole seconds.
func (l *secondsLock) Acquire(ctx context.Context, key string, ttl time.Duration) (clients.Lease, error) {
	start := time.Now()
	secs := int64((ttl + time.Second - 1) / time.Second)
	if l.truncate {
		secs = int64(ttl / time.Second) // the bug
	}
	if err := l.take(ctx, key, "ex", secs); err != nil {
		return clients.Lease{}, err
	}
	return clients.Lease{Key: key, Owner: l.owner, Until: start.Add(ttl), Expires: start.Add(ttl)}, nil
}

// Release deletes the key when it is still the owner's.
func (l *secondsLock) Release(ctx context.Context, lease clients.Lease) error {
	return l.release(ctx, lease.Key)
}

func (l *secondsLock) Close() error { return l.rdb.Close() }
