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

// TestCrashOpensANewClient runs a scenario whose acquires sometimes end in
// an unknown outcome and checks the runner's part of a crash: the crashed
// process's lock client is closed, the worker's next process builds a new
// one, and every client is closed by the end of the run.
func TestCrashOpensANewClient(t *testing.T) {
	sc := load(t, "redis-single-baseline")
	var built atomic.Int32
	var closed atomic.Int32
	factory := func(ctx context.Context, target clients.Target) (clients.Locker, error) {
		l, err := clients.NewRedisSingle(ctx, target)
		if err != nil {
			return nil, err
		}
		built.Add(1)
		return &flakyLocker{Locker: l, closed: &closed}, nil
	}
	res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1),
		runner.WithTimeLimit(3*time.Second), runner.WithLocker(factory))
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
		}
		if op.Process >= sc.Workers {
			successors[op.Process] = true
		}
	}
	if crashes == 0 || len(successors) == 0 {
		t.Fatalf("%d crashes, %d processes after them: the test did not exercise a crash", crashes, len(successors))
	}
	// One client per worker at the start, and one per process that went on
	// after a crash.
	if got, want := int(built.Load()), sc.Workers+len(successors); got != want {
		t.Fatalf("%d lock clients built for %d workers and %d processes after crashes, want %d", got, sc.Workers, len(successors), want)
	}
	if c, b := closed.Load(), built.Load(); c != b {
		t.Fatalf("%d of %d lock clients closed", c, b)
	}
}
