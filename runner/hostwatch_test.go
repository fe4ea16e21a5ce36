package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/hostwatch"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
)

// steppedClock is the host's clocks with the wall clock stepped by step
// from its at-th reading on: a step of the host's clock that touches
// nothing but what the run's watch reads.
type steppedClock struct {
	hostwatch.Clock
	mu    sync.Mutex
	n, at int
	step  time.Duration
}

func (c *steppedClock) Now() hostwatch.Reading {
	r := c.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n++; c.n >= c.at {
		r.Wall = r.Wall.Add(c.step)
	}
	return r
}

// TestRunRecordsHostClockStep runs a scenario against a real redis-server
// while the clocks its host watch reads step the wall clock by 17 s: the
// history records the step once, before its end record; results.json, the
// console's source, lists it; run.log says it; and the stored history
// checked again offline gives the same host events and host notes.
func TestRunRecordsHostClockStep(t *testing.T) {
	store := t.TempDir()
	sc := load(t, "redis-single-gc-pause")
	clock := func(start time.Time) hostwatch.Clock {
		return &steppedClock{Clock: hostwatch.SystemClock(start), at: 5, step: 17 * time.Second}
	}
	res, err := runner.Run(context.Background(), sc, runner.WithStore(store), runner.WithSeed(3), runner.WithTimeLimit(1500*time.Millisecond), runner.WithHostClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := history.ReadFile(filepath.Join(res.Dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !h[len(h)-1].IsEnd() {
		t.Fatalf("the last op is %+v, not the end record", h[len(h)-1])
	}
	events := checker.HostEvents(h)
	var steps []history.HostEvent
	for _, e := range events {
		if e.Kind == history.FClockStep {
			steps = append(steps, e)
		}
	}
	if len(steps) != 1 || steps[0].Size < 16*time.Second || steps[0].Size > 18*time.Second {
		t.Fatalf("clock steps recorded %+v, want one of about +17s", steps)
	}
	stored, err := reports.ReadResults(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.HostEvents) != len(events) || stored.HostEvents[0] != events[0] {
		t.Errorf("results.json lists host events %+v, the history %+v", stored.HostEvents, events)
	}
	logged, err := os.ReadFile(filepath.Join(res.Dir, "run.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), steps[0].Describe()) {
		t.Errorf("run.log does not say %q", steps[0].Describe())
	}
	offline, err := checker.CheckFile(context.Background(), filepath.Join(res.Dir, reports.HistoryFile), checker.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(offline.HostEvents) != len(events) {
		t.Errorf("checked offline: host events %+v, want %+v", offline.HostEvents, events)
	}
	for i, r := range offline.Results {
		for j, a := range r.Anomalies {
			if got := stored.Checkers[i].Anomalies[j].Host; got != a.Host {
				t.Errorf("%s's host note: %q in results.json, %q checked offline", a.Kind, got, a.Host)
			}
		}
	}
}
