package clients

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAcquireWait checks every algorithm's waiting acquire against real
// servers: a waiter gets the lock once its holder gives it back (or, for the
// timeout locks, once the holder's lease ends) within the wait, and a waiter
// whose wait ends while the lock is held is refused (ErrNotAcquired), after
// having waited; zk.Lock, which cannot be abandoned, gives up by closing its
// client (ErrClientClosed), and redsync, which drops the answers of its
// tries, ends in an unknown outcome.
func TestAcquireWait(t *testing.T) {
	eachAlgorithm(t, func(t *testing.T, ctx context.Context, c algorithmCase, eps []Endpoint) {
		a := newLocker(t, c.Name, eps, 0, c.options)
		b := newLocker(t, c.Name, eps, 1, c.options)
		if c.caps[CapWait] != With {
			if Has(b, CapWait) {
				t.Fatalf("%s can wait, but is not declared to", c.Name)
			}
			return
		}
		w, ok := b.(Waiter)
		if !ok {
			t.Fatalf("%s is not a Waiter", c.Name)
		}
		key := "wait-" + c.Name
		ttl := c.ttl
		if ttl > 2*time.Second {
			ttl = 2 * time.Second
		}
		const short = 300 * time.Millisecond
		la, err := a.Acquire(ctx, key, ttl)
		// A lock that frees itself at the end of its validity (the slot
		// of redis-zadd-timeout) must stay held through the short wait:
		// take it again at the start of its next validity if not.
		for err == nil && !la.Until.IsZero() && time.Until(la.Until) < 2*short {
			time.Sleep(time.Until(la.Until) + 10*time.Millisecond)
			la, err = a.Acquire(ctx, key, ttl)
		}
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		start := time.Now()
		_, err = w.AcquireWait(ctx, key, ttl, short)
		switch {
		case c.lease.GiveUp == GiveUpClosesClient:
			if !errors.Is(err, ErrClientClosed) || errors.Is(err, ErrNotAcquired) {
				t.Fatalf("wait while held: err = %v, want ErrClientClosed", err)
			}
			b = newLocker(t, c.Name, eps, 1, c.options)
			w = b.(Waiter)
		case c.lease.GiveUp == GiveUpUnknown:
			if !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrNotAcquired) {
				t.Fatalf("wait while held: err = %v, want an unknown outcome", err)
			}
		case !errors.Is(err, ErrNotAcquired):
			t.Fatalf("wait while held: err = %v, want ErrNotAcquired", err)
		}
		if waited := time.Since(start); waited < short-MaxRetryDelay {
			t.Fatalf("refused after %v of a %v wait", waited, short)
		}
		released := make(chan error, 1)
		go func() {
			time.Sleep(200 * time.Millisecond)
			err := a.Release(context.Background(), la)
			if errors.Is(err, ErrReleaseNoOp) {
				err = nil
			}
			released <- err
		}()
		lb, err := w.AcquireWait(ctx, key, ttl, 5*time.Second)
		if err != nil {
			t.Fatalf("wait for a lock given back: %v", err)
		}
		if err := <-released; err != nil {
			t.Fatalf("release: %v", err)
		}
		if err := b.Release(ctx, lb); err != nil && !errors.Is(err, ErrReleaseNoOp) {
			t.Fatalf("release by the waiter: %v", err)
		}
	})
}
