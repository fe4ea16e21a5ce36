package runner_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestScenarioTCPReachesEveryClient runs a scenario with and without a
// tcp block and requires every lock client the run builds to be given the
// block's settings in its Target (none without it).
func TestScenarioTCPReachesEveryClient(t *testing.T) {
	tests := []struct {
		name string
		tcp  scenarios.TCP
		want clients.TCP
	}{
		{"without a tcp block", scenarios.TCP{}, clients.TCP{}},
		{"with one", scenarios.TCP{KeepAliveIdle: 2 * time.Second, KeepAliveInterval: time.Second, KeepAliveCount: 3, UserTimeout: 1500 * time.Millisecond},
			clients.TCP{KeepAliveIdle: 2 * time.Second, KeepAliveInterval: time.Second, KeepAliveCount: 3, UserTimeout: 1500 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := load(t, "redis-single-baseline")
			sc.TCP = tt.tcp
			var mu sync.Mutex
			var got []clients.TCP
			capture := func(ctx context.Context, target clients.Target) (clients.Locker, error) {
				mu.Lock()
				got = append(got, target.TCP)
				mu.Unlock()
				return clients.NewRedisSingle(ctx, target)
			}
			if _, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1),
				runner.WithTimeLimit(time.Second), runner.WithLocker(capture)); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) < sc.Workers {
				t.Fatalf("%d lock clients built for %d workers", len(got), sc.Workers)
			}
			for i, tcp := range got {
				if tcp != tt.want {
					t.Errorf("lock client %d was given tcp %+v, want %+v", i, tcp, tt.want)
				}
			}
		})
	}
}

// TestBadTCPStartsNothing gives a scenario built in code tcp settings the
// kernel would round and requires the run to refuse it, naming the field,
// before it builds any lock client.
func TestBadTCPStartsNothing(t *testing.T) {
	sc := load(t, "redis-single-baseline")
	sc.TCP = scenarios.TCP{KeepAliveIdle: 1500 * time.Millisecond}
	built := false
	factory := func(ctx context.Context, target clients.Target) (clients.Locker, error) {
		built = true
		return clients.NewRedisSingle(ctx, target)
	}
	_, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1),
		runner.WithTimeLimit(time.Second), runner.WithLocker(factory))
	if !errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), "tcp.keepalive-idle") {
		t.Fatalf("err = %v, want ErrInvalid naming tcp.keepalive-idle", err)
	}
	if built {
		t.Error("a lock client was built for a scenario with bad tcp settings")
	}
}
