package clients

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestCrashEndsTheSession crashes a holder of each declared session lock
// (LeaseSemantics.Session: closing the client frees the lock) and checks
// that another worker then takes the lock at once, long before the lease
// could run out, because the crash closed the holder's client; and that
// the crashed worker goes on as a new process with a new client of its
// own. A lock whose contended acquire waits and closes its
// client (GiveUpClosesClient) is left out: the contender cannot be refused.
func TestCrashEndsTheSession(t *testing.T) {
	cs := newClusters(t)
	tested := 0
	for _, tc := range algorithmCases(t, false) {
		if !tc.lease.Session || tc.lease.GiveUp == GiveUpClosesClient {
			continue
		}
		tested++
		// A 30 s lease, and the sessions the tests ask for (at least
		// that): only closing the client frees the lock within the test.
		tc.ttl = 30 * time.Second
		t.Run(tc.label, func(t *testing.T) { crashEndsTheSession(t, cs, tc) })
	}
	if tested < 3 {
		t.Fatalf("%d session locks tested, want pg-advisory, zk-recipe and etcd-mutex at least", tested)
	}
}

// crashEndsTheSession is TestCrashEndsTheSession's test of one session lock.
func crashEndsTheSession(t *testing.T, cs *clusters, tc algorithmCase) {
	eps := cs.endpoints(t, tc.spec)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	alg := tc.Algorithm
	open := func(ctx context.Context) (Locker, error) {
		return alg.New(ctx, Target{Worker: 0, Endpoints: eps, Clock: wallClock{}, Rand: newTestRand(1), Options: tc.options})
	}
	first, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder()
	a := &Recorded{Locker: first, Rec: rec, Proc: NewProcess(0, 2), Open: open}
	t.Cleanup(func() { _ = a.Close() })
	b := newLocker(t, tc.Name, eps, 1, tc.options)
	key := "crash-" + tc.Name

	if _, err := a.Acquire(ctx, key, tc.ttl); err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if _, err := b.Acquire(ctx, key, tc.ttl); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("contended acquire: err = %v, want ErrNotAcquired", err)
	}
	crashed := time.Now()
	a.Crash(false)
	if a.Locker != nil {
		t.Fatal("the crashed process kept its Locker")
	}
	if a.Proc.ID() != 2 {
		t.Fatalf("process after the crash = %d, want 2", a.Proc.ID())
	}
	takenAfterCrash(t, ctx, b, key, tc.ttl, crashed)
	newProcessGoesOn(t, ctx, a, first, rec, key, tc.ttl)
}

// takenAfterCrash waits until b takes key, which a crash freed at crashed,
// failing when that takes more than 5s, and releases it.
func takenAfterCrash(t *testing.T, ctx context.Context, b Locker, key string, ttl time.Duration, crashed time.Time) {
	t.Helper()
	// The server frees the lock on close, not necessarily before
	// Close returns (PostgreSQL ends the backend on its own time).
	for {
		lb, err := b.Acquire(ctx, key, ttl)
		if err == nil {
			if err := b.Release(ctx, lb); err != nil {
				t.Fatalf("release: %v", err)
			}
			return
		}
		if !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("acquire after the crash: %v", err)
		}
		if time.Since(crashed) > 5*time.Second {
			t.Fatalf("the lock is still held %v after its holder crashed; its lease is %v", time.Since(crashed), ttl)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// newProcessGoesOn checks that the crashed worker a goes on as a new
// process, with a Locker other than first, that takes and releases key
// and records every op after the crash as process 2.
func newProcessGoesOn(t *testing.T, ctx context.Context, a *Recorded, first Locker, rec *history.Recorder, key string, ttl time.Duration) {
	t.Helper()
	opened, err := a.Ready(ctx)
	if err != nil || !opened {
		t.Fatalf("Ready after the crash: opened %v, err %v", opened, err)
	}
	if a.Locker == first {
		t.Fatal("the new process reuses the crashed process's Locker")
	}
	la, err := a.Acquire(ctx, key, ttl)
	if err != nil {
		t.Fatalf("acquire by the new process: %v", err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatalf("release by the new process: %v", err)
	}
	for _, op := range rec.History() {
		if op.Index >= 2 && op.Process != 2 {
			t.Fatalf("op %d after the crash recorded as process %d, want 2", op.Index, op.Process)
		}
	}
}
