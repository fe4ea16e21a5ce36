// Package hostwatch watches the harness's own host through a run's driving
// phase: a step of the host's wall clock against its monotonic clock, and a
// stall of the harness itself (the watch woke much later than it asked
// to). Each is recorded in the history as a host record, so that a finding
// made while the host misbehaved says so, also when the history is checked
// again offline (docs/history.md §1, "The host records").
package hostwatch

import (
	"context"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// Period is how often the watch compares the clocks: often enough that a
// stall is measured within a twentieth of a second, rarely enough that the
// watch costs nothing next to the workload.
const Period = 50 * time.Millisecond

// StepThreshold is the smallest change of the wall clock against the
// monotonic clock, between two readings, that the watch records as a clock
// step. A slewing time daemon moves the wall clock against the monotonic
// clock by at most half a millisecond a second, a thousandth of it per
// Period, so a change of 100 ms is a step and never a slew; a step smaller
// than that is within what the lease model's drift allowance absorbs for
// leases of 10 s and more (1%).
const StepThreshold = 100 * time.Millisecond

// StallThreshold is the smallest lateness of the watch's wake-up, beyond
// Period, that it records as a stall. A busy machine wakes a sleeping
// goroutine late by a few milliseconds, by tens under heavy load; a stall
// of 100 ms is of the order of the lease margins a run judges, and long
// enough that every worker and server on the host may have stood still
// with the watch.
const StallThreshold = 100 * time.Millisecond

// Reading is one reading of the two clocks, taken together: the wall clock
// (Wall, without a monotonic reading) and the monotonic clock (Mono, the
// harness time: the monotonic time since the run's clock started).
type Reading struct {
	Wall time.Time
	Mono time.Duration
}

// offset is the wall clock's reading (since the Unix epoch) less the
// monotonic clock's: constant while neither is stepped or slewed.
func (r Reading) offset() time.Duration { return time.Duration(r.Wall.UnixNano()) - r.Mono }

// Clock is what the watch reads and waits on: the host's clocks, or a test's.
type Clock interface {
	// Now returns a reading of both clocks.
	Now() Reading
	// Sleep waits for d, or until ctx ends, and reports whether it waited
	// the whole of d (false: ctx ended).
	Sleep(ctx context.Context, d time.Duration) bool
}

// SystemClock returns the host's clocks, with the monotonic clock counted
// from start: the run's clock (history.Recorder.Start), so that a reading's
// Mono is harness time.
func SystemClock(start time.Time) Clock { return systemClock{start: start} }

// systemClock is SystemClock's Clock.
type systemClock struct{ start time.Time }

// Now reads both clocks with one time.Now: its wall reading, stripped of
// the monotonic one (Round(0)), and its monotonic reading since start.
func (c systemClock) Now() Reading {
	t := time.Now()
	return Reading{Wall: t.Round(0), Mono: t.Sub(c.start)}
}

// Sleep waits on a timer for d, or until ctx ends.
func (c systemClock) Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Watch watches the clocks of c every Period until ctx ends, and hands
// record each host record it finds, to be stamped and written to the
// history: a stall (history.StallOp) when it woke later than Period by
// more than StallThreshold, and a clock step (history.ClockStepOp) when the
// wall clock moved against the monotonic clock by more than StepThreshold
// since the previous reading. A step is recorded only when a second reading
// confirms it, so that a reading whose two clocks were read apart (the
// thread was preempted between them) is not taken for one; the time record
// takes (the history may be held by the nemesis) is not counted as a stall.
// Watch returns when ctx ends.
func Watch(ctx context.Context, c Clock, record func(history.Op)) {
	prev := c.Now()
	if again := c.Now(); abs(again.offset()-prev.offset()) > StepThreshold {
		prev = c.Now() // the first reading was torn
	}
	base, slept := prev.offset(), prev.Mono
	for c.Sleep(ctx, Period) {
		now := c.Now()
		wrote := false
		if late := now.Mono - slept - Period; late > StallThreshold {
			record(history.StallOp(late))
			wrote = true
		}
		if off := now.offset(); abs(off-base) <= StepThreshold {
			base = off // a slew is followed, never summed into a step
		} else if again := c.Now(); abs(again.offset()-off) <= StepThreshold {
			record(history.ClockStepOp(again.offset()-base, prev.Mono))
			base, now, wrote = again.offset(), again, true
		}
		prev, slept = now, now.Mono
		if wrote {
			slept = c.Now().Mono
		}
	}
}

// abs returns the absolute value of d.
func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
