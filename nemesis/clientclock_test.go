package nemesis_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
)

// TestBehaviourClientClock runs two workers whose Locker reads the worker's
// own clock at every acquire, and skews w0's clock by an hour for two
// seconds: w0's readings must run an hour ahead of the host's during the
// fault and agree with it before and after, and w1's must never move.
func TestBehaviourClientClock(t *testing.T) {
	probe := &clockProbe{skews: map[int][]time.Duration{}}
	steps := nemesis.Schedule{{At: time.Second, Fault: "client-clock", Targets: []string{"w0"}, Offset: time.Hour, Duration: 2 * time.Second}}
	runScenario(t, "redis-single-baseline", 2, 4*time.Second, steps, probe.factory)

	probe.mu.Lock()
	defer probe.mu.Unlock()
	// w0's readings, runs of equal skews merged: 0, then 1h, then 0.
	if got := slices.Compact(slices.Clone(probe.skews[0])); !slices.Equal(got, []time.Duration{0, time.Hour, 0}) {
		t.Fatalf("w0's clock was off by %v in turn, want 0, then 1h during the fault, then 0", got)
	}
	if got := slices.Compact(slices.Clone(probe.skews[1])); !slices.Equal(got, []time.Duration{0}) {
		t.Fatalf("w1's clock, which no fault skewed, was off by %v in turn, want 0 only", got)
	}
}

// clockProbe is a lock that is never granted and records, at each
// acquire, how far the worker's clock is from the host's, to the minute.
type clockProbe struct {
	mu    sync.Mutex
	skews map[int][]time.Duration
}

func (p *clockProbe) factory(_ context.Context, t clients.Target) (clients.Locker, error) {
	return &clockProbeLocker{p: p, t: t}, nil
}

// clockProbeLocker is one worker's clockProbe.
type clockProbeLocker struct {
	p *clockProbe
	t clients.Target
}

var _ clients.Locker = (*clockProbeLocker)(nil)

func (l *clockProbeLocker) Acquire(context.Context, string, time.Duration) (clients.Lease, error) {
	skew := l.t.Clock.Now().Sub(time.Now()).Round(time.Minute)
	l.p.mu.Lock()
	l.p.skews[l.t.Worker] = append(l.p.skews[l.t.Worker], skew)
	l.p.mu.Unlock()
	return clients.Lease{}, clients.ErrNotAcquired
}

func (l *clockProbeLocker) Release(context.Context, clients.Lease) error { return clients.ErrNotHeld }

func (l *clockProbeLocker) Close() error { return nil }
