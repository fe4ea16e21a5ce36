package runner_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// flakyLocker is redis-single whose every third acquire times out after it
// took the lock: an outcome the worker cannot know, so its process crashes.
type flakyLocker struct {
	clients.Locker
	acquires int
	closed   *atomic.Int32
}

var errLostReply = errors.New("reply lost")

func (f *flakyLocker) Acquire(ctx context.Context, key string, ttl time.Duration) (clients.Lease, error) {
	l, err := f.Locker.Acquire(ctx, key, ttl)
	f.acquires++
	if err == nil && f.acquires%3 == 0 {
		return clients.Lease{}, errLostReply
	}
	return l, err
}

func (f *flakyLocker) Close() error {
	f.closed.Add(1)
	return f.Locker.Close()
}

// flakyFactory builds flaky redis-single clients, counting those built and
// those closed.
func flakyFactory(built, closed *atomic.Int32) clients.Factory {
	return func(ctx context.Context, target clients.Target) (clients.Locker, error) {
		l, err := clients.NewRedisSingle(ctx, target)
		if err != nil {
			return nil, err
		}
		built.Add(1)
		return &flakyLocker{Locker: l, closed: closed}, nil
	}
}

// TestCrashClient runs a scenario whose acquires sometimes end in an
// unknown outcome and checks the runner's part of a crash. By default the
// crashed process's lock client is closed and the worker's next process
// builds a new one. With lock.on-error: keep-client every unknown outcome
// still ends the process (the next ops come from new process numbers) and
// is recorded as kept, but no new client is built: each worker's one client
// serves all its processes. Either way every client is closed by the end.
func TestCrashClient(t *testing.T) {
	for _, onError := range []string{scenarios.OnErrorCrash, scenarios.OnErrorKeepClient} {
		t.Run(onError, func(t *testing.T) {
			sc := load(t, "redis-single-baseline")
			sc.Lock.OnError = onError
			keep := onError == scenarios.OnErrorKeepClient
			var built, closed atomic.Int32
			res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1),
				runner.WithTimeLimit(3*time.Second), runner.WithLocker(flakyFactory(&built, &closed)))
			if err != nil {
				t.Fatal(err)
			}
			h, _, err := history.ReadFile(filepath.Join(res.Dir, reports.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			crashes := 0
			successors := map[int]bool{} // processes after a crash that issued ops
			for _, op := range h {
				if op.IsNemesis() {
					continue
				}
				if op.Type == history.Info {
					crashes++
					if op.Kept != keep {
						t.Fatalf("op %d: kept = %v with on-error %s: %+v", op.Index, op.Kept, onError, op)
					}
				}
				if op.Process >= sc.Workers {
					successors[op.Process] = true
				}
			}
			if crashes == 0 || len(successors) == 0 {
				t.Fatalf("%d crashes, %d processes after them: the test did not exercise a crash", crashes, len(successors))
			}
			// One client per worker at the start, and, unless kept, one
			// per process that went on after a crash.
			want := sc.Workers
			if !keep {
				want += len(successors)
			}
			if got := int(built.Load()); got != want {
				t.Fatalf("%d lock clients built for %d workers and %d processes after crashes, want %d", got, sc.Workers, len(successors), want)
			}
			if c, b := closed.Load(), built.Load(); c != b {
				t.Fatalf("%d of %d lock clients closed", c, b)
			}
		})
	}
}

// stuckWaiter is redis-single whose waiting acquires never get the lock:
// they wait until their context ends and say so, an unknown outcome.
type stuckWaiter struct{ clients.Locker }

func (s stuckWaiter) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (clients.Lease, error) {
	<-ctx.Done()
	return clients.Lease{}, context.Cause(ctx)
}

// TestWaitAtTheEndStaysPending runs waiting acquires that never return on
// their own, with a wait far longer than the run: the run's end cuts them
// short, and the history leaves each pending (an invoke and no completion),
// since the worker was still waiting when the record ended.
func TestWaitAtTheEndStaysPending(t *testing.T) {
	sc := load(t, "redis-single-baseline")
	sc.Lock.Acquire, sc.Lock.Wait = scenarios.AcquireWait, time.Hour
	factory := func(ctx context.Context, target clients.Target) (clients.Locker, error) {
		l, err := clients.NewRedisSingle(ctx, target)
		if err != nil {
			return nil, err
		}
		return stuckWaiter{l}, nil
	}
	res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1),
		runner.WithTimeLimit(time.Second), runner.WithLocker(factory))
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := history.ReadFile(filepath.Join(res.Dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	pending := map[int]bool{}
	for _, op := range h {
		if op.IsNemesis() {
			continue
		}
		if op.F != history.FAcquire {
			t.Fatalf("op %d: %+v; only acquires were asked for", op.Index, op)
		}
		switch op.Type {
		case history.Invoke:
			pending[op.Process] = true
		default:
			t.Fatalf("op %d: %+v; a wait cut short by the run's end must stay pending", op.Index, op)
		}
	}
	if len(pending) != sc.Workers {
		t.Fatalf("%d pending acquires, want one per worker (%d)", len(pending), sc.Workers)
	}
}
