package clients

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRenew checks every algorithm declared to renew (CapRenew) whose lease
// runs for a ttl that a release ends (the timeout locks' renewal moves their
// token: TestPgTimeoutRenew; the session locks': TestSessionRenew) against
// real servers: a renewed lease outlives its first ttl (a contender still
// finds the lock held), its Until and Expires move to the new ttl and agree
// with the server's view (leaseServers, where the tests know it), and a
// lease the holder no longer has cannot be renewed (ErrNotHeld).
func TestRenew(t *testing.T) {
	cs := newClusters(t)
	tested := 0
	for _, c := range algorithmCases(t, false) {
		if c.caps[CapRenew] != With || c.lease.Expiry != ExpiresAfterTTL || c.expires() {
			continue
		}
		tested++
		name := c.Name
		t.Run(name, func(t *testing.T) {
			eps := cs.endpoints(t, c.spec)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			a := newLocker(t, name, eps, 0, c.options)
			b := newLocker(t, name, eps, 1, c.options)
			if _, ok := a.(Renewer); !ok {
				t.Fatalf("%s is not a Renewer", name)
			}
			key := "renew-" + name
			const short, long = 600 * time.Millisecond, 5 * time.Second
			la, err := a.Acquire(ctx, key, short)
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			start := time.Now()
			lr, err := a.(Renewer).Renew(ctx, la, long)
			end := time.Now()
			if err != nil {
				t.Fatalf("renew: %v", err)
			}
			if lr.Token != la.Token || lr.Owner != la.Owner || lr.Key != la.Key {
				t.Fatalf("renewal changed the lease's identity: %+v after %+v", lr, la)
			}
			if c.server != nil {
				lo, hi := c.server(t, ctx, eps, lr, start, end)
				if lr.Expires.After(hi) || lr.Expires.Before(lo.Add(-end.Sub(start)-time.Millisecond)) {
					t.Fatalf("renewed Expires %v after the renewal started, server frees it %v to %v after it",
						lr.Expires.Sub(start), lo.Sub(start), hi.Sub(start))
				}
			}
			if !lr.Until.After(la.Until) || lr.Until.After(lr.Expires) {
				t.Fatalf("renewed Until %v after the renewal started, Expires %v", lr.Until.Sub(start), lr.Expires.Sub(start))
			}
			time.Sleep(time.Until(la.Expires) + 100*time.Millisecond)
			if _, err := b.Acquire(ctx, key, short); !errors.Is(err, ErrNotAcquired) {
				t.Fatalf("acquire after the first ttl of a renewed lease: err = %v, want ErrNotAcquired", err)
			}
			stranger := lr
			stranger.Owner = "not-the-owner"
			if _, err := a.(Renewer).Renew(ctx, stranger, long); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("renewal by another owner: err = %v, want ErrNotHeld", err)
			}
			if err := a.Release(ctx, lr); err != nil {
				t.Fatalf("release: %v", err)
			}
			if _, err := a.(Renewer).Renew(ctx, lr, long); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("renewal after the release: err = %v, want ErrNotHeld", err)
			}
		})
	}
	if tested < 4 {
		t.Fatalf("%d algorithms tested, want redis-single, redis-fenced, redlock and redsync at least", tested)
	}
}

// TestSessionRenew checks the renewal of the session locks: one keep-alive
// (etcd) or one read that the server answers (ZooKeeper) moves Expires to
// the session's timeout from the renewal, and a released lease cannot be
// renewed.
func TestSessionRenew(t *testing.T) {
	cs := newClusters(t)
	for _, tc := range []struct {
		name    string
		ttl     time.Duration
		session time.Duration // what the server grants for ttl and the options
	}{
		{"etcd-mutex", 2 * time.Second, 2 * time.Second},
		{"zk-recipe", 2 * time.Second, 60 * time.Second}, // the contract's options ask for 90 s
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := caseOf(t, tc.name)
			eps := cs.endpoints(t, c.spec)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			a := newLocker(t, tc.name, eps, 0, c.options)
			la, err := a.Acquire(ctx, "session-renew-"+tc.name, tc.ttl)
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			time.Sleep(300 * time.Millisecond)
			start := time.Now()
			lr, err := a.(Renewer).Renew(ctx, la, tc.ttl)
			end := time.Now()
			if err != nil {
				t.Fatalf("renew: %v", err)
			}
			if lr.Expires.Before(start.Add(tc.session-time.Second)) || lr.Expires.After(end.Add(tc.session)) || !lr.Expires.After(la.Expires) {
				t.Fatalf("renewed Expires %v after the renewal started (first lease's %v), want about %v",
					lr.Expires.Sub(start), la.Expires.Sub(start), tc.session)
			}
			if lr.Token != la.Token || lr.Owner != la.Owner {
				t.Fatalf("renewal changed the lease's identity: %+v after %+v", lr, la)
			}
			if err := a.Release(ctx, lr); err != nil {
				t.Fatalf("release: %v", err)
			}
			if _, err := a.(Renewer).Renew(ctx, lr, tc.ttl); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("renewal after the release: err = %v, want ErrNotHeld", err)
			}
		})
	}
}

// TestPgTimeoutRenew checks pg-timeout's renewal against a real server: it
// moves the row's timestamp forward while the lease holds it, the new
// timestamp is the renewed lease's token, the renewed lease's Expires agrees
// with the stored row, a contender still finds the lock held after the first
// lease's end, and a lease that no longer holds the row (an older token, or
// a timeout that ran out) cannot be renewed.
func TestPgTimeoutRenew(t *testing.T) {
	cs := newClusters(t)
	eps := cs.endpoints(t, postgresOne)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a := newLocker(t, "pg-timeout", eps, 0, nil)
	b := newLocker(t, "pg-timeout", eps, 1, nil)
	// A new row: its stored timeout is this test's ttl.
	key := "renew-pg-timeout-" + time.Now().Format("150405.000000")
	const ttl = time.Second
	la, err := a.Acquire(ctx, key, ttl)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	lr, err := a.(Renewer).Renew(ctx, la, ttl)
	end := time.Now()
	if err != nil {
		t.Fatalf("renew: %v", err)
	}
	if lr.Token <= la.Token || lr.Key != la.Key {
		t.Fatalf("renewed lease %+v after %+v: want the same key and a later timestamp as its token", lr, la)
	}
	lo, hi := pgTimeoutRow(t, ctx, eps, lr, start, end)
	if lr.Expires.After(hi) || lr.Expires.Before(lo.Add(-end.Sub(start)-time.Millisecond)) {
		t.Fatalf("renewed Expires %v after the renewal started, the row frees it %v to %v after it",
			lr.Expires.Sub(start), lo.Sub(start), hi.Sub(start))
	}
	if !lr.Until.After(la.Until) || lr.Until.After(lr.Expires) {
		t.Fatalf("renewed Until %v after the renewal started, Expires %v", lr.Until.Sub(start), lr.Expires.Sub(start))
	}
	time.Sleep(time.Until(la.Expires) + 100*time.Millisecond)
	if _, err := b.Acquire(ctx, key, ttl); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("acquire after the first lease's end: err = %v, want ErrNotAcquired", err)
	}
	if _, err := a.(Renewer).Renew(ctx, la, ttl); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("renewal with the older token: err = %v, want ErrNotHeld", err)
	}
	time.Sleep(time.Until(lr.Expires) + 100*time.Millisecond)
	if _, err := a.(Renewer).Renew(ctx, lr, ttl); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("renewal after the timeout ran out: err = %v, want ErrNotHeld", err)
	}
	if _, err := b.Acquire(ctx, key, ttl); err != nil {
		t.Fatalf("acquire after the renewed lease ran out: %v", err)
	}
}
