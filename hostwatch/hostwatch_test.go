package hostwatch

import (
	"context"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// fakeClock is a Clock a test steps and stalls: each Sleep advances the
// monotonic clock by what was asked and then applies the next change of
// its script; the wall clock follows the monotonic one plus every step so
// far. Sleep reports the end of the watch once the script is done, so the
// watch runs exactly as many periods as the script has changes, with no
// real waiting.
type fakeClock struct {
	wall0  time.Time
	mono   time.Duration
	step   time.Duration
	torn   []time.Duration // added to the wall clock of the next readings, one each
	script []func(*fakeClock)
}

func (c *fakeClock) Now() Reading {
	w := c.wall0.Add(c.mono + c.step)
	if len(c.torn) > 0 {
		w, c.torn = w.Add(c.torn[0]), c.torn[1:]
	}
	return Reading{Wall: w, Mono: c.mono}
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) bool {
	if len(c.script) == 0 || ctx.Err() != nil {
		return false
	}
	c.mono += d
	c.script[0](c)
	c.script = c.script[1:]
	return true
}

// The changes a script applies after a period.
func quiet(*fakeClock) {}

func stepWall(d time.Duration) func(*fakeClock) {
	return func(c *fakeClock) { c.step += d }
}

func stall(d time.Duration) func(*fakeClock) {
	return func(c *fakeClock) { c.mono += d }
}

func tear(d time.Duration) func(*fakeClock) {
	return func(c *fakeClock) { c.torn = append(c.torn, d) }
}

func both(fs ...func(*fakeClock)) func(*fakeClock) {
	return func(c *fakeClock) {
		for _, f := range fs {
			f(c)
		}
	}
}

// watch runs Watch over script and returns the events it recorded, each
// stamped with the fake monotonic clock as a Recorder would stamp it.
func watch(t *testing.T, c *fakeClock) []history.HostEvent {
	t.Helper()
	var events []history.HostEvent
	Watch(context.Background(), c, func(op history.Op) {
		op.Time = c.mono
		e, ok, err := history.HostEventOf(op)
		if !ok || err != nil {
			t.Fatalf("recorded %+v, not a host record: %v", op, err)
		}
		events = append(events, e)
	})
	if len(c.script) != 0 {
		t.Fatalf("the watch stopped with %d periods of its script left", len(c.script))
	}
	return events
}

func TestWatch(t *testing.T) {
	wall0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		script []func(*fakeClock)
		want   []history.HostEvent // Time and From checked for the stalls and steps below
	}{
		{"quiet", []func(*fakeClock){quiet, quiet, quiet}, nil},
		{"wall clock steps ahead", []func(*fakeClock){quiet, stepWall(17 * time.Second), quiet},
			[]history.HostEvent{{Kind: history.FClockStep, Size: 17 * time.Second, Time: 2 * Period, From: Period}}},
		{"wall clock steps back", []func(*fakeClock){stepWall(-250 * time.Millisecond), quiet},
			[]history.HostEvent{{Kind: history.FClockStep, Size: -250 * time.Millisecond, Time: Period, From: 0}}},
		{"step at the threshold is none", []func(*fakeClock){quiet, stepWall(StepThreshold), stepWall(-StepThreshold)}, nil},
		{"small changes are followed, never summed", []func(*fakeClock){stepWall(60 * time.Millisecond), stepWall(60 * time.Millisecond), stepWall(60 * time.Millisecond)}, nil},
		{"torn reading is no step", []func(*fakeClock){quiet, tear(time.Second), quiet}, nil},
		{"stall", []func(*fakeClock){quiet, stall(598 * time.Millisecond), quiet},
			[]history.HostEvent{{Kind: history.FStall, Size: 598 * time.Millisecond, Time: 2*Period + 598*time.Millisecond, From: 2 * Period}}},
		{"stall at the threshold is none", []func(*fakeClock){stall(StallThreshold), quiet}, nil},
		{"machine frozen with its clock stepped", []func(*fakeClock){both(stall(11*time.Minute), stepWall(-3*time.Second))},
			[]history.HostEvent{
				{Kind: history.FStall, Size: 11 * time.Minute, Time: Period + 11*time.Minute, From: Period},
				{Kind: history.FClockStep, Size: -3 * time.Second, Time: Period + 11*time.Minute, From: 0},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := watch(t, &fakeClock{wall0: wall0, script: tt.script})
			if len(got) != len(tt.want) {
				t.Fatalf("recorded %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("event %d is %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestWatchTornFirstReading: a first reading whose clocks were read apart
// is not the base the next readings are held to.
func TestWatchTornFirstReading(t *testing.T) {
	c := &fakeClock{wall0: time.Unix(1e9, 0), torn: []time.Duration{time.Second}, script: []func(*fakeClock){quiet, quiet}}
	if got := watch(t, c); len(got) != 0 {
		t.Fatalf("recorded %+v after a torn first reading, want nothing", got)
	}
}

// TestWatchStopsWithContext: the watch returns once its context ends.
func TestWatchStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, SystemClock(time.Now()), func(op history.Op) { t.Errorf("recorded %+v", op) })
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the watch went on after its context ended")
	}
}

// TestSystemClockReading: the host's reading gives a wall clock without a
// monotonic reading, and harness time counted from the start given.
func TestSystemClockReading(t *testing.T) {
	start := time.Now()
	r := SystemClock(start).Now()
	if r.Wall != r.Wall.Round(0) {
		t.Errorf("the wall reading %v carries a monotonic reading", r.Wall)
	}
	if r.Mono < 0 || r.Mono > time.Since(start) {
		t.Errorf("harness time %v is not between 0 and the time since the start", r.Mono)
	}
}

// TestWatchRecordingIsNoStall: the time the watch spends handing on a
// record (the history held by the nemesis) is not taken for a stall.
func TestWatchRecordingIsNoStall(t *testing.T) {
	c := &fakeClock{wall0: time.Unix(1e9, 0), script: []func(*fakeClock){quiet, stepWall(time.Second), quiet, quiet}}
	var kinds []string
	Watch(context.Background(), c, func(op history.Op) {
		kinds = append(kinds, op.F)
		c.mono += 500 * time.Millisecond // the record waited for the history
	})
	if len(kinds) != 1 || kinds[0] != history.FClockStep {
		t.Fatalf("recorded %v, want the clock step alone", kinds)
	}
}
