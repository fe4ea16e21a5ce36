package clients

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// unsafeWithoutFaults are the algorithms that let two workers hold the lock
// at once even without faults, and why.
var unsafeWithoutFaults = map[string]string{
	// See TestPgStateCaptureRace.
	"pg-state": "a capture waiting on a concurrent capture succeeds after it",
}

// TestMutualExclusionWithoutFaults runs three workers per algorithm against
// one key, without faults, and checks that no two of them ever hold the lock
// at once and that each worker's errors are only ErrNotAcquired.
func TestMutualExclusionWithoutFaults(t *testing.T) {
	cs := newClusters(t)
	for _, c := range algorithmCases(t, false) {
		if unsafeWithoutFaults[c.Name] != "" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			eps := cs.endpoints(t, c.spec)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			ttl := 5 * time.Second
			if c.expires() {
				ttl = 30 * time.Millisecond
			}
			const workers, attempts = 3, 8
			lockers := make([]Locker, workers)
			for w := range lockers {
				lockers[w] = newLocker(t, c.Name, eps, w, c.options)
			}
			key := "exclusion-" + c.Name
			var holders, taken atomic.Int32
			var wg sync.WaitGroup
			errs := make(chan error, workers*attempts)
			for w, l := range lockers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range attempts {
						lease, err := l.Acquire(ctx, key, ttl)
						if errors.Is(err, ErrNotAcquired) {
							time.Sleep(time.Duration(w+1) * time.Millisecond)
							continue
						}
						if err != nil {
							errs <- err
							return
						}
						// A careful holder uses a lease only while it is valid:
						// a timeout lock's lease may end at its slot's end, a
						// moment after it was granted.
						if !lease.Until.IsZero() && time.Until(lease.Until) < 5*time.Millisecond {
							if err := l.Release(ctx, lease); err != nil && !errors.Is(err, ErrReleaseNoOp) {
								errs <- err
								return
							}
							continue
						}
						taken.Add(1)
						if n := holders.Add(1); n != 1 {
							errs <- errors.New("two workers hold the lock at once")
						}
						time.Sleep(2 * time.Millisecond)
						holders.Add(-1)
						if err := l.Release(ctx, lease); err != nil && !errors.Is(err, ErrReleaseNoOp) {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if taken.Load() == 0 {
				t.Fatal("no worker ever took the lock")
			}
		})
	}
}

// TestPgStateCaptureRace pins down pg-state's weakness: a capture that waits
// on a concurrent capture's row lock is not turned away when that capture
// commits (PostgreSQL rechecks only the outer condition, id in the
// subquery's old result), so both captures hold the lock.
func TestPgStateCaptureRace(t *testing.T) {
	cs := newClusters(t)
	eps := cs.endpoints(t, postgresOne)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	a := newLocker(t, "pg-state", eps, 0, nil)
	b := newLocker(t, "pg-state", eps, 1, nil)
	const key = "capture-race"
	// Create the task row (done) through an ordinary capture and release.
	la, err := a.Acquire(ctx, key, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx, la); err != nil {
		t.Fatal(err)
	}

	// Both captures held open in transactions.
	first, err := a.(*Postgres).conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	second, err := b.(*Postgres).conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Rollback(ctx)
	var id, status string
	if err := first.QueryRow(ctx, pgStateCapture, key).Scan(&id, &status); err != nil {
		t.Fatalf("first capture: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- second.QueryRow(ctx, pgStateCapture, key).Scan(&id, &status) }()
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("second capture did not wait for the first: %v", err)
	default:
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("second capture after the first committed: err = %v, want a captured row", err)
	}
	if status != "in_progress" {
		t.Fatalf("second capture returned status %q", status)
	}
}
